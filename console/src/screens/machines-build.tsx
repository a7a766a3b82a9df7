import { useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import type { Answer } from '../api/types';
import { useAction, useLoad } from '../ui/hooks';
import { ErrorNote, LoadState, Section, Select } from '../ui/parts';
import { PricePreview } from '../ui/price-preview';

type Plan = Answer<'listBuildMachineOptions'>['plans'][number];

const describe = (p: Plan) =>
  `${p.id}: ${p.cpu} CPU, ${p.memory_mb} MB${p.max_processes ? `, ${p.max_processes} processes` : ''}`;

/** The machine the environment's builds run on: a provider, then one of its plans, priced before "Choose". */
export function BuildMachine({ id }: { id: string }) {
  const path = { params: { path: { id } } };
  const current = useLoad(() => ok(api.GET('/environments/{id}/build-machines', path)), [id]);
  const [provider, setProvider] = useState('');
  const [plan, setPlan] = useState('');
  const [saved, setSaved] = useState(false);
  const c = current.data;
  const chosenProvider = provider || c?.provider || '';
  // A provider's plans with their prices (POST .../options changes nothing).
  const options = useLoad(
    () =>
      chosenProvider
        ? ok(api.POST('/environments/{id}/build-machines/options', { ...path, body: { provider: chosenProvider } }))
        : Promise.resolve(undefined),
    [id, chosenProvider],
  );
  const choose = useAction(async () => {
    setSaved(false);
    await ok(api.POST('/environments/{id}/build-machines', { ...path, body: { provider: chosenProvider, plan } }));
    await current.reload();
    setPlan('');
    setSaved(true);
  });
  const choice = options.data?.plans.find((p) => p.id === plan);
  const same = c && chosenProvider === c.provider && plan === c.plan;
  return (
    <Section title="Build machine">
      <LoadState load={current} what="the build machine" />
      {c && (
        <>
          <p>
            Builds run on <strong>{c.provider}</strong>, plan {c.plan} ({c.cpu} CPU, {c.memory_mb} MB).
          </p>
          <Select
            label="Build provider"
            name="provider"
            value={chosenProvider}
            onChange={(e) => {
              setProvider((e.target as HTMLSelectElement).value);
              setPlan('');
              setSaved(false);
            }}
            options={c.providers.map((p) => ({ value: p.id, label: p.id }))}
            error={choose.error}
          />
          <ErrorNote error={options.error} />
          {options.data && (
            <Select
              label="Build plan"
              name="plan"
              value={plan}
              onChange={(e) => {
                setPlan((e.target as HTMLSelectElement).value);
                setSaved(false);
              }}
              options={[
                { value: '', label: '—' },
                ...options.data.plans.map((p) => ({ value: p.id, label: describe(p) })),
              ]}
              error={choose.error}
            />
          )}
          {choice && options.data && !same && (
            <>
              <PricePreview
                label={`Builds on ${chosenProvider} ${choice.id}`}
                monthly={choice.monthly_price}
                delta={choice.monthly_price_delta}
                currency={options.data.currency}
              />
              <button type="button" onClick={() => choose.run()} disabled={choose.busy}>
                Choose build machine
              </button>
            </>
          )}
          {saved && <p role="status">Build machine chosen: it takes effect for the next build.</p>}
          <ErrorNote error={choose.error} />
        </>
      )}
    </Section>
  );
}
