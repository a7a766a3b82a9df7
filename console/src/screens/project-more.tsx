import { api, ok } from '../api/client';
import { useLoad } from '../ui/hooks';
import { BackupWindow, ProjectRegistries, ProjectSettings } from './project-settings';
import { ProjectEdge } from './project-edge';
import { ProjectLogs } from './project-logs';
import { NotificationRules, ProjectTerms } from './project-rules';
import { VariablesEditor } from './variables';

/** The project's sections other than its environments. */
export function ProjectSubPage({ id, tab, onRenamed }: { id: string; tab: string; onRenamed(): void }) {
  const teamId = useLoad(async () => {
    if (tab !== 'backup-window' && tab !== 'settings') return undefined;
    const list = await ok(api.GET('/projects'));
    return list.data.find((p) => p.id === id)?.team_id;
  }, [id, tab]);
  switch (tab) {
    case 'variables':
      return <VariablesEditor scope="projects" id={id} />;
    case 'edge':
      return <ProjectEdge id={id} />;
    case 'logs':
      return <ProjectLogs id={id} />;
    case 'settings':
      return (
        <>
          <ProjectSettings id={id} onSaved={onRenamed} />
          <NotificationRules id={id} teamId={teamId.data} />
          <ProjectTerms id={id} />
        </>
      );
    case 'registries':
      return <ProjectRegistries id={id} />;
    case 'backup-window':
      return <BackupWindow id={id} teamId={teamId.data} />;
    default:
      return <p>No such section.</p>;
  }
}
