import type { Deps } from '../../system/deps';
import { BillingDetails } from '../../db/models/billing-details';
import { Subscription } from '../../db/models/subscription';
import type { Actor } from '../../core/actor';
import { errors } from '../../core/errors';
import { recordActivity } from '../../db/queries/activity';
import { addressFormat, checkAddress, knownCountry, ADDRESS_FIELDS } from './address-format';
import type { BillingBody } from './schemas';
import { billingCurrency } from './currency';

/** How a country writes an address; 422 on `country` when Google's data does not know it. */
export async function getAddressFormat(country: string) {
  if (!knownCountry(country)) throw errors.invalid({ country: 'is not a country the address data knows' });
  return addressFormat(country);
}

/** The team's billing details, what it pays for and the monthly total of what still runs. */
export async function getBilling(deps: Deps, teamId: string) {
  const [details, subs] = await Promise.all([
    BillingDetails.query(deps.knex).findById(teamId),
    Subscription.query(deps.knex)
      .where({ team_id: teamId })
      .orderBy([{ column: 'started_at' }, { column: 'order' }]),
  ]);
  const cents = subs
    .filter((s) => s.status !== 'ended')
    .reduce((sum, s) => sum + Math.round(Number(s.monthly_price) * 100), 0);
  return {
    details,
    currency: billingCurrency(deps),
    monthly_total: cents / 100,
    subscriptions: subs,
  };
}

/**
 * Saves the billing details after checking the address against its country's format: every missing
 * or malformed field is named at once (422), and nothing is kept then.
 */
export async function saveBilling(deps: Deps, actor: Actor, teamId: string, body: BillingBody) {
  if (!knownCountry(body.country)) throw errors.invalid({ country: 'is not a country the address data knows' });
  const given: Record<string, string> = { name: body.name };
  for (const f of ADDRESS_FIELDS) if (body[f]) given[f] = body[f]!;
  const format = await addressFormat(body.country);
  const fields: Record<string, string> = {};
  const used = new Set(format.fields.map((f) => f.name as string));
  for (const f of ADDRESS_FIELDS)
    if (body[f] && !used.has(f)) fields[f] = `is not part of an address in ${body.country}`;
  const checked = await checkAddress(body.country, given);
  if (!checked.ok) Object.assign(fields, checked.fields);
  if (Object.keys(fields).length || !checked.ok)
    throw errors.invalid(fields, `The billing address is not complete for ${body.country}`);
  // Kept as typed (the country's upper-casing is for printing), but for regions matched to their key.
  const { name: _name, ...address } = given;
  if (checked.address.country_area) address.country_area = checked.address.country_area;
  const row = {
    name: body.name,
    email: body.email,
    country: body.country,
    vat_id: body.vat_id || null,
    address,
    updated_at: new Date(),
  };
  await deps.knex.transaction(async (trx) => {
    await trx('billing_details')
      .insert({ team_id: teamId, ...row, address: JSON.stringify(address) })
      .onConflict('team_id')
      .merge({ ...row, address: JSON.stringify(address) } as Record<string, unknown>);
    await recordActivity(trx, {
      teamId,
      actor,
      kind: 'configuration',
      type: 'billing_details_saved',
      summary: `Billing details saved (${body.country})`,
    });
  });
  return getBilling(deps, teamId);
}
