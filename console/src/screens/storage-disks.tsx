import { useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import type { Answer } from '../api/types';
import type { Loaded } from '../ui/hooks';
import { useAction } from '../ui/hooks';
import { ErrorNote, LoadState, Section, Select } from '../ui/parts';
import { PricePreview } from '../ui/price-preview';
import { gbOf } from '../lib/storage-price';
import { useTaskRoute } from '../ui/tasks';

type Disk = Answer<'getStorageDisk'>;
type Grow = Answer<'getVolumeGrow'>;

const TITLE = { database: 'Database disk', files: 'Files disk (the volume)' } as const;

/** One disk: its size, root and use; "Move" to another root of STORAGE_ROOTS, "Discard" the copy a move left. */
export function DiskCard({ id, load }: { id: string; load: Loaded<Disk> }) {
  const toTask = useTaskRoute();
  const d = load.data;
  const [location, setLocation] = useState('');
  const move = useAction(async () => {
    if (!d || !confirm(`Move the ${d.disk} disk to ${location}? The web process stops while the data is copied.`))
      return;
    toTask(
      await ok(
        api.POST('/environments/{id}/storage/{disk}/move', {
          params: { path: { id, disk: d.disk } },
          body: { location },
        }),
      ),
    );
  });
  const discard = useAction(async () => {
    if (!confirm('Delete the copies the last moves left behind?')) return;
    toTask(
      await ok(api.POST('/environments/{id}/storage/discard', { params: { path: { id } }, body: { confirm: true } })),
    );
  });
  const others = d?.roots.filter((r) => r !== d.location) ?? [];
  return (
    <Section title={d ? TITLE[d.disk] : 'Disk'}>
      <LoadState load={load} what="the disk" />
      {d && (
        <>
          <dl>
            <dt>Size</dt>
            <dd>{d.size_gb} GB</dd>
            <dt>Used</dt>
            <dd>{gbOf(d.used_bytes)}</dd>
            <dt>Root</dt>
            <dd>
              <code class="break">{d.location}</code>
            </dd>
            {d.old_location && (
              <>
                <dt>Copy kept</dt>
                <dd>
                  <code class="break">{d.old_location}</code>
                </dd>
              </>
            )}
          </dl>
          {others.length > 0 && (
            <>
              <Select
                label={`Move the ${d.disk} disk to`}
                name="location"
                value={location}
                onChange={(e) => setLocation((e.target as HTMLSelectElement).value)}
                options={[{ value: '', label: '—' }, ...others.map((r) => ({ value: r, label: r }))]}
                error={move.error}
              />
              {location && (
                <>
                  <p class="muted">Same size, same price: no change to the bill.</p>
                  <button type="button" onClick={() => move.run()} disabled={move.busy}>
                    Move
                  </button>
                </>
              )}
            </>
          )}
          {d.old_location && (
            <button type="button" class="danger" onClick={() => discard.run()} disabled={discard.busy}>
              Discard the old copy
            </button>
          )}
          <ErrorNote error={move.error ?? discard.error} />
        </>
      )}
    </Section>
  );
}

/** The volume grows (never shrinks): the sizes it may grow to, each with what it adds to the bill, then "Grow". */
export function VolumeGrow({ volumeId, load }: { volumeId: string; load: Loaded<Grow | undefined> }) {
  const toTask = useTaskRoute();
  const [size, setSize] = useState(0);
  const g = load.data;
  const choice = g?.choices.find((c) => c.size_gb === size);
  const grow = useAction(async () => {
    toTask(await ok(api.POST('/volumes/{id}/grow', { params: { path: { id: volumeId } }, body: { size_gb: size } })));
  });
  return (
    <Section title="Grow the volume">
      <LoadState load={load} what="the volume" />
      {g && (
        <>
          <p>The volume has {g.size_gb} GB; it only grows, and the allowance grows with it.</p>
          <Select
            label="Grow the volume to"
            name="size_gb"
            value={String(size || '')}
            onChange={(e) => setSize(Number((e.target as HTMLSelectElement).value))}
            options={[
              { value: '', label: '—' },
              ...g.choices.map((c) => ({ value: String(c.size_gb), label: `${c.size_gb} GB` })),
            ]}
            error={grow.error}
          />
          {choice && (
            <>
              <PricePreview
                label={`${choice.size_gb} GB`}
                monthly={null}
                delta={choice.monthly_price_delta}
                currency={g.currency}
              />
              <button type="button" onClick={() => grow.run()} disabled={grow.busy}>
                Grow
              </button>
            </>
          )}
          <ErrorNote error={grow.error} />
        </>
      )}
    </Section>
  );
}
