import { generateKeyPairSync } from 'node:crypto';
import sshpk from 'sshpk';

/**
 * A new Ed25519 key pair for an ssh repository host: node makes it, sshpk writes the private key in
 * OpenSSH's own format (ssh does not read PKCS#8 Ed25519 keys) and the public key as one
 * `ssh-ed25519 AAAA... comment` line.
 */
export function newSshKeyPair(comment: string): { privateKey: string; publicKey: string } {
  const { privateKey } = generateKeyPairSync('ed25519');
  const key = sshpk.parsePrivateKey(privateKey.export({ type: 'pkcs8', format: 'pem' }), 'pkcs8');
  key.comment = comment;
  const pub = key.toPublic();
  pub.comment = comment;
  return { privateKey: key.toString('openssh'), publicKey: pub.toString('ssh') };
}
