import { useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import type { Answer } from '../api/types';
import { formatMonthly } from '../lib/price';
import { allowancePreview, gbOf } from '../lib/storage-price';
import { useAction, useLoad } from '../ui/hooks';
import { ErrorNote, Field, FieldErrors, LoadState, Section } from '../ui/parts';
import { ActionForm } from '../ui/action-form';
import { PricePreview } from '../ui/price-preview';
import { DiskCard, VolumeGrow } from './storage-disks';

type Allowance = Answer<'getStorageAllowance'>;
type Grow = Answer<'getVolumeGrow'>;

const num = (e: Event) => Number((e.target as HTMLInputElement).value);

/**
 * Storage (CONTRACT "Machines"): the allowance with its price, its split between the database and files disks,
 * each disk's root (moves) and the volume's growth. Every change shows its price before the confirming click.
 */
export function EnvironmentStorage({ id }: { id: string }) {
  const path = { params: { path: { id } } };
  const allowance = useLoad(() => ok(api.GET('/environments/{id}/storage/allowance', path)), [id]);
  const split = useLoad(() => ok(api.GET('/environments/{id}/storage/split', path)), [id]);
  const disk = (d: 'database' | 'files') => () =>
    ok(api.GET('/environments/{id}/storage/{disk}/disk', { params: { path: { id, disk: d } } }));
  const files = useLoad(disk('files'), [id]);
  const database = useLoad(disk('database'), [id]);
  const volumeId = files.data?.volume_id;
  const grow = useLoad(
    () =>
      volumeId ? ok(api.GET('/volumes/{id}/grow', { params: { path: { id: volumeId } } })) : Promise.resolve(undefined),
    [volumeId],
  );
  const reload = async () => {
    await Promise.all([allowance.reload(), split.reload(), files.reload(), database.reload(), grow.reload()]);
  };
  const a = allowance.data;
  return (
    <>
      <Section title="Storage allowance">
        <LoadState load={allowance} what="the allowance" />
        {a && <AllowanceForm id={id} a={a} grow={grow.data} onSaved={reload} />}
      </Section>
      <Section title="Split between the disks">
        <LoadState load={split} what="the split" />
        {split.data && a && (
          <SplitForm id={id} allowance={a} split={split.data} onSaved={reload} key={`${a.allowance_gb}`} />
        )}
      </Section>
      <div class="grid">
        <DiskCard id={id} load={database} />
        <DiskCard id={id} load={files} />
      </div>
      {volumeId && <VolumeGrow volumeId={volumeId} load={grow} />}
    </>
  );
}

function AllowanceForm(props: { id: string; a: Allowance; grow?: Grow; onSaved(): Promise<void> }) {
  const { a } = props;
  const [gb, setGb] = useState(a.allowance_gb);
  const [saved, setSaved] = useState(false);
  const save = useAction(async () => {
    setSaved(false);
    await ok(
      api.POST('/environments/{id}/storage/allowance', {
        params: { path: { id: props.id } },
        body: { allowance_gb: gb },
      }),
    );
    await props.onSaved();
    setSaved(true);
  });
  const preview = Number.isInteger(gb) && gb > 0 && gb !== a.allowance_gb ? allowancePreview(a, props.grow, gb) : null;
  return (
    <ActionForm onSubmit={() => save.run()}>
      <dl>
        <dt>Allowance</dt>
        <dd>
          {a.allowance_gb} GB ({a.included_gb} GB included in the plan)
        </dd>
        <dt>Used</dt>
        <dd>
          database {gbOf(a.used_bytes.database)}, files {gbOf(a.used_bytes.files)}
        </dd>
        <dt>Price</dt>
        <dd>
          {formatMonthly(a.monthly_price, a.currency)} for the storage beyond the plan
          {a.order && <span class="muted"> (subscription {a.order})</span>}
        </dd>
      </dl>
      <Field
        label="New allowance (GB)"
        name="allowance_gb"
        type="number"
        min={1}
        step={1}
        value={String(gb)}
        onInput={(e) => {
          setGb(num(e));
          setSaved(false);
        }}
        error={save.error}
        hint="More goes to the files disk (the volume); less is taken from the database disk."
      />
      {preview && (
        <PricePreview label={`${gb} GB`} monthly={preview.monthly} delta={preview.delta} currency={a.currency} />
      )}
      {!preview && gb > a.included_gb && gb !== a.allowance_gb && (
        <p class="muted">
          No answer states the price of a GB beyond the plan yet: the price shows here once the allowance is set.
        </p>
      )}
      {gb !== a.allowance_gb && (
        <button type="submit" disabled={save.busy}>
          Set allowance
        </button>
      )}
      {saved && <p role="status">Allowance saved.</p>}
      <ErrorNote error={save.error} />
    </ActionForm>
  );
}

function SplitForm(props: {
  id: string;
  allowance: Allowance;
  split: { database_gb: number; files_gb: number };
  onSaved(): Promise<void>;
}) {
  const total = props.allowance.allowance_gb;
  const [database, setDatabase] = useState(props.split.database_gb);
  const [saved, setSaved] = useState(false);
  const files = total - database;
  const save = useAction(async () => {
    setSaved(false);
    await ok(
      api.POST('/environments/{id}/storage/split', {
        params: { path: { id: props.id } },
        body: { database_gb: database, files_gb: files },
      }),
    );
    await props.onSaved();
    setSaved(true);
  });
  const changed = database !== props.split.database_gb;
  return (
    <ActionForm onSubmit={() => save.run()}>
      <p>
        The two disks always sum to the allowance ({total} GB): database {props.split.database_gb} GB, files{' '}
        {props.split.files_gb} GB now.
      </p>
      <Field
        label="Database disk (GB)"
        name="database_gb"
        type="number"
        min={1}
        max={total - 1}
        step={1}
        value={String(database)}
        onInput={(e) => {
          setDatabase(num(e));
          setSaved(false);
        }}
        error={save.error}
      />
      <p>
        Files disk: <strong>{files} GB</strong> (the rest of the allowance)
      </p>
      <FieldErrors error={save.error} prefix="files_gb" />
      {changed && (
        <>
          <PricePreview
            label={`database ${database} GB, files ${files} GB`}
            monthly={props.allowance.monthly_price}
            delta={0}
            currency={props.allowance.currency}
          />
          <button type="submit" disabled={save.busy}>
            Split
          </button>
        </>
      )}
      {saved && <p role="status">Split saved.</p>}
      <ErrorNote error={save.error} />
    </ActionForm>
  );
}
