import { Model } from 'objection';

/** Properties are the column names (snake_case), the same names the API shows. */
export class BaseModel extends Model {
  static useLimitInFirst = true;
  id!: string;
}
