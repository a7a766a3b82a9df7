/**
 * Asking an ACME CA (RFC 8555, the maintained `acme-client` package) for one certificate, answering its
 * HTTP-01 challenge through the edge (`acme_challenges`, served on EDGE_PORT). The account key (one per
 * directory) and the certificate's private key are sealed at rest (system/crypto); neither is logged.
 */
import { readFileSync } from 'node:fs';
import https from 'node:https';
import { rootCertificates } from 'node:tls';
import { X509Certificate } from 'node:crypto';
import type AcmeClient from 'acme-client';
import type { Knex } from 'knex';
import type { AcmeConfig } from '../../system/config';
import { open, seal } from '../../system/crypto';
import type { Secrets } from '../../system/secrets';
import { putChallenge, removeChallenge, type IssuedCertificate } from '../../db/queries/certificates';
import { aad } from '../../db/aad';
import { awaitEdges } from '../../db/queries/edge-routes';

/**
 * acme-client, loaded at the first certificate: its axios and crypto stack are a third of a second to load, which
 * every process that imports the activities (and every test file) paid without asking for a certificate.
 */
let loaded: Promise<typeof AcmeClient> | undefined;
const loadAcme = () => (loaded ??= import('acme-client').then((m) => m.default));

let trusted: string | undefined;
/** ACME_CA_FILE: the directory's CA is trusted besides the system's (a private CA, or Pebble in tests). */
function trustCa(acme: typeof AcmeClient, caFile: string | undefined): void {
  if (!caFile || trusted === caFile) return;
  const extra = readFileSync(caFile, 'utf8');
  acme.axios.defaults.httpsAgent = new https.Agent({ ca: [...rootCertificates, extra], keepAlive: true });
  trusted = caFile;
}

/** The account key of the directory: made and sealed on first use (one row per directory URL). */
async function accountKey(
  acme: typeof AcmeClient,
  knex: Knex,
  secrets: Secrets,
  directoryUrl: string,
): Promise<string> {
  const row = await knex('acme_accounts').where({ directory_url: directoryUrl }).first('account_key_sealed');
  if (row) return open(secrets, row.account_key_sealed, aad.acmeAccount(directoryUrl));
  const key = (await acme.crypto.createPrivateEcdsaKey('P-256')).toString();
  await knex('acme_accounts')
    .insert({ directory_url: directoryUrl, account_key_sealed: seal(secrets, key, aad.acmeAccount(directoryUrl)) })
    .onConflict('directory_url')
    .ignore();
  // Two first uses at once: the row that won is the account.
  const won = await knex('acme_accounts').where({ directory_url: directoryUrl }).first('account_key_sealed');
  return open(secrets, won.account_key_sealed, aad.acmeAccount(directoryUrl));
}

const UNTRUSTED = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** A readable reason out of what acme-client or the CA said (never a key: neither puts one in a message). */
export function acmeReason(err: unknown, hostname: string): string {
  const message = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: string }).code;
  if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'ETIMEDOUT' || code === 'ECONNRESET')
    return `the ACME directory could not be reached (${code}): ${message}`;
  if (code && UNTRUSTED.has(code))
    return `the ACME directory's TLS certificate is not trusted (${code}; a private CA needs ACME_CA_FILE): ${message}`;
  if (/challenge|authoriz|connection|unauthorized|dns|key authorization/i.test(message))
    return `the CA could not confirm that ${hostname} points at this edge (HTTP-01 on port 80): ${message}`;
  return `the CA refused the request: ${message}`;
}

interface ObtainInput {
  knex: Knex;
  secrets: Secrets;
  acme: AcmeConfig;
  domainId: string;
  hostname: string;
  /** One line for the task log (never a key). */
  log: (line: string) => void;
}

/** One attempt: an order, its HTTP-01 challenge, the certificate. Throws with the CA's reason. */
export async function obtainCertificate(o: ObtainInput): Promise<IssuedCertificate> {
  const directoryUrl = o.acme.directoryUrl;
  if (!directoryUrl) throw new Error('HTTPS is not configured: ACME_DIRECTORY_URL is not set');
  const acme = await loadAcme();
  trustCa(acme, o.acme.caFile);
  const client = new acme.Client({
    directoryUrl,
    accountKey: await accountKey(acme, o.knex, o.secrets, directoryUrl),
    backoffAttempts: 12,
    backoffMin: 500,
    backoffMax: 10_000,
  });
  const [key, csr] = await acme.crypto.createCsr(
    { commonName: o.hostname, altNames: [o.hostname] },
    await acme.crypto.createPrivateEcdsaKey('P-256'),
  );
  o.log(`==> Asking ${directoryUrl} for a certificate for ${o.hostname}`);
  const tokens: string[] = [];
  try {
    const chain = await client.auto({
      csr,
      email: o.acme.email,
      termsOfServiceAgreed: true,
      challengePriority: ['http-01'],
      // The edge answers on EDGE_PORT; the CA's own validation is the check (DNS may be split-horizon here).
      skipChallengeVerification: true,
      challengeCreateFn: async (_authz, challenge, keyAuthorization) => {
        if (challenge.type !== 'http-01') throw new Error(`unexpected challenge type ${challenge.type}`);
        tokens.push(challenge.token);
        await putChallenge(o.knex, { token: challenge.token, hostname: o.hostname, keyAuthorization });
        // every live edge answers it before the CA is told to look
        await awaitEdges(o.knex);
        o.log(`==> Answering the CA's HTTP-01 challenge at http://${o.hostname}/.well-known/acme-challenge/`);
      },
      challengeRemoveFn: async (_authz, challenge) => removeChallenge(o.knex, challenge.token),
    });
    const leaf = new X509Certificate(chain);
    if (!leaf.checkHost(o.hostname)) throw new Error(`the CA issued a certificate that does not name ${o.hostname}`);
    const issuer = /(?:^|\n)CN=([^\n]+)/.exec(leaf.issuer)?.[1] ?? leaf.issuer;
    return {
      issuer,
      serial: leaf.serialNumber,
      notBefore: new Date(leaf.validFrom),
      expiresAt: new Date(leaf.validTo),
      certificatePem: chain.toString(),
      privateKeySealed: seal(o.secrets, key, aad.certificateKey(o.domainId)),
    };
  } finally {
    // Nothing of this attempt stays answerable, whatever happened.
    for (const token of tokens) await removeChallenge(o.knex, token).catch(() => undefined);
  }
}
