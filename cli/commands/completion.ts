import type { Command, Option } from 'commander';
import { CliError } from '../errors';

/**
 * Shell completion generated from the command tree itself, so it never lags behind the commands:
 * `source <(service completion bash)` (zsh: `source <(service completion zsh)`).
 */

const flags = (options: readonly Option[]) => options.flatMap((o) => [o.long, o.short].filter(Boolean) as string[]);

function bashScript(program: Command): string {
  const global = [...flags(program.options).filter((f) => !['--version', '-V'].includes(f)), '--help'];
  const top = [...program.commands.flatMap((c) => [c.name(), ...c.aliases()]), '--version'];
  const cases = program.commands.map((c) => {
    const words = [...c.commands.map((s) => s.name()), ...flags(c.options), ...global];
    const nested = c.commands.map(
      (s) => `        ${s.name()}) words="${[...flags(s.options), ...global].join(' ')}" ;;`,
    );
    const body = nested.length
      ? `      if [ "$COMP_CWORD" -gt 2 ]; then\n        case "\${COMP_WORDS[2]}" in\n${nested.join('\n')}\n        esac\n      fi`
      : '';
    return `    ${[c.name(), ...c.aliases()].join('|')}) words="${words.join(' ')}"${body ? `\n${body}` : ''} ;;`;
  });
  return `# bash completion for service (source <(service completion bash))
_service_complete() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" words=""
  if [ "$COMP_CWORD" -eq 1 ]; then
    words="${[...top, ...global].join(' ')}"
  else
    case "\${COMP_WORDS[1]}" in
${cases.join('\n')}
    esac
  fi
  COMPREPLY=( $(compgen -W "$words" -- "$cur") )
}
complete -o default -F _service_complete service
`;
}

export function register(program: Command): void {
  program
    .command('completion')
    .description('Print a shell completion script: source <(service completion bash)')
    .argument('[shell]', 'bash or zsh', 'bash')
    .action((shell: string) => {
      if (shell !== 'bash' && shell !== 'zsh') throw new CliError(`No completion for "${shell}": use bash or zsh`);
      const script = bashScript(program);
      process.stdout.write(shell === 'zsh' ? `autoload -U +X bashcompinit && bashcompinit\n${script}` : script);
    });
}
