import { useLocation } from 'preact-iso';
import { api, ok } from '../api/client';
import { useSession } from '../session';
import { useAction } from '../ui/hooks';
import { ErrorNote, Section } from '../ui/parts';

/**
 * The page an invitation's e-mail links to (`/invitations/{id}`): "Accept" joins the team (POST
 * /invitations/{id}/accept, only for the invited address) and opens it. Signed out, the page asks for
 * e-mail and password first, as every page does.
 */
export function InvitationPage({ id }: { id: string }) {
  const { route } = useLocation();
  const { me } = useSession();
  const accept = useAction(async () => {
    const membership = await ok(api.POST('/invitations/{id}/accept', { params: { path: { id } } }));
    route(`/teams/${membership.team_id}`);
  });
  return (
    <>
      <h1>Invitation</h1>
      <Section title="Join the team">
        <p>
          You were invited to a team. Accepting works only for the address the invitation was sent to
          {me ? ` (you are signed in as ${me.email})` : ''}.
        </p>
        <button type="button" onClick={() => accept.run()} disabled={accept.busy}>
          Accept
        </button>
        <ErrorNote error={accept.error} />
      </Section>
    </>
  );
}
