// Types of the parts of @cpsdqs/google-i18n-address that api/billing/address-format.ts uses (it ships none).
declare module '@cpsdqs/google-i18n-address' {
  export interface ValidationRules {
    countryCode: string;
    countryName: string;
    addressFormat: string;
    addressLatinFormat: string;
    allowedFields: string[];
    requiredFields: string[];
    upperFields: string[];
    countryAreaType?: string;
    countryAreaChoices: Array<[string, string]>;
    cityType?: string;
    cityAreaType?: string;
    postalCodeType?: string;
    postalCodeExamples: string[];
  }
  export class InvalidAddress extends Error {
    errors: Record<string, 'required' | 'invalid'>;
  }
  export function getValidationRules(address: Record<string, string>): Promise<ValidationRules>;
  export function normalizeAddress(address: Record<string, string>): Promise<Record<string, string>>;
}
