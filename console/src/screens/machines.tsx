import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api, ok } from '../api/client';
import { useAction, useLoad } from '../ui/hooks';
import { ErrorNote, Loading, Section, Select } from '../ui/parts';
import { ActionForm } from '../ui/action-form';
import { PricePreview } from '../ui/price-preview';
import { Reshape, ResizeServers } from './machines-more';
import { BuildMachine } from './machines-build';

export function MachinesPage({ id }: { id: string }) {
  const { route } = useLocation();
  const path = { params: { path: { id } } };
  const scale = useLoad(() => ok(api.GET('/environments/{id}/scale', path)), [id]);
  const [instances, setInstances] = useState<number>();
  const doScale = useAction(async () => {
    const task = await ok(api.POST('/environments/{id}/scale', { ...path, body: { instances: instances! } }));
    route(`/tasks/${task.id}`);
  });
  const s = scale.data;
  const choice = s?.choices.find((c) => c.instances === instances);
  return (
    <>
      <Section title="Scale">
        {scale.loading && !s ? <Loading what="the instances" /> : <ErrorNote error={scale.error} />}
        {s && (
          <ActionForm onSubmit={() => doScale.run()}>
            <p>
              {s.instances} instance{s.instances === 1 ? '' : 's'} of plan {s.plan} now (at most {s.max}).
            </p>
            <Select
              label="Instances"
              name="instances"
              value={String(instances ?? s.instances)}
              onChange={(e) => setInstances(Number((e.target as HTMLSelectElement).value))}
              options={[
                ...(s.choices.some((c) => c.instances === s.instances)
                  ? []
                  : [{ value: String(s.instances), label: `${s.instances} (now)` }]),
                ...s.choices.map((c) => ({
                  value: String(c.instances),
                  label: c.instances === s.instances ? `${c.instances} (now)` : String(c.instances),
                })),
              ].sort((a, b) => Number(a.value) - Number(b.value))}
              error={doScale.error}
            />
            {choice && choice.instances !== s.instances && (
              <>
                <PricePreview
                  label={`${choice.instances} instances`}
                  monthly={choice.monthly_price}
                  delta={choice.monthly_price_delta}
                  currency={s.currency}
                />
                <button type="submit" disabled={doScale.busy}>
                  Scale
                </button>
              </>
            )}
            <ErrorNote error={doScale.error} />
          </ActionForm>
        )}
      </Section>
      <ResizeServers environmentId={id} />
      <Reshape id={id} />
      <BuildMachine id={id} />
    </>
  );
}
