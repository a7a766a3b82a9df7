import { z } from 'zod';
import { ROLES } from '../lib/policy';
import { idParams } from '../lib/params';

export { idParams };

export const TEAM_NAME_MAX = 100;

const teamName = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(TEAM_NAME_MAX, `must be at most ${TEAM_NAME_MAX} characters`)
  .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), 'must not contain control characters');

export const role = z.enum(ROLES as unknown as ['owner', 'admin', 'developer', 'viewer']);

const email = z.string().trim().max(254, 'must be at most 254 characters').pipe(z.email('must be an e-mail address'));

// ---- request bodies --------------------------------------------------------------------------

export const createTeamBody = z.strictObject({ name: teamName });
export const updateTeamSettingsBody = z.strictObject({ name: teamName.optional() });
export const createInvitationBody = z.strictObject({ email, role });
export const updateMembershipBody = z.strictObject({ role });

// ---- responses -------------------------------------------------------------------------------

export const teamSchema = z.strictObject({ id: z.uuid(), name: z.string(), role, created_at: z.string() });
export const teamListSchema = z.strictObject({ data: z.array(teamSchema) });
export const newTeamSchema = z.strictObject({
  fields: z.strictObject({ name: z.strictObject({ required: z.boolean(), max_length: z.number() }) }),
  creator_role: role,
  roles: z.array(z.strictObject({ name: role, description: z.string() })),
});
export const teamSettingsSchema = z.strictObject({
  id: z.uuid(),
  name: z.string(),
  role,
  created_at: z.string(),
  fields: z.strictObject({ name: z.strictObject({ max_length: z.number(), editable: z.boolean() }) }),
  next_steps: z
    .array(z.strictObject({ id: z.string(), done: z.boolean() }))
    .nullable()
    .describe(
      "The caller's checklist (connect_repository, first_deploy, add_domain, create_token, invite_teammate); null once hidden",
    ),
});

export const membershipSchema = z.strictObject({
  id: z.uuid(),
  team_id: z.uuid(),
  user_id: z.uuid(),
  name: z.string(),
  email: z.string(),
  role,
  created_at: z.string(),
});
export const invitationStatus = z.enum(['open', 'expired', 'accepted', 'revoked']);
export const invitationSchema = z.strictObject({
  id: z.uuid(),
  team_id: z.uuid(),
  email: z.string(),
  role,
  status: invitationStatus,
  expires_at: z.string(),
  created_at: z.string(),
});
export const peopleSchema = z.strictObject({
  data: z.array(membershipSchema.omit({ team_id: true, created_at: true })),
  invitations: z.array(invitationSchema.pick({ id: true, email: true, role: true, status: true, expires_at: true })),
  assignable_roles: z.array(role),
});
