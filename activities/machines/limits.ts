import { loadPriceList, maxProcessesOf } from '../../core/pricing';
import type { Size } from '../../db/queries/machines';
import type { Config } from '../../system/config';
import type { Limits } from '../../host/provider';

/**
 * A server's or build machine's size as its processes are held to it: CPU, memory and its plan's max_processes
 * (the provider holds a step to it: `provider.heldSteps`).
 */
export function planLimits(config: Pick<Config, 'priceList'>, size: Size | null | undefined): Limits | null {
  if (!size) return null;
  return { cpu: size.cpu, memoryMb: size.memoryMb, maxProcesses: maxProcessesOf(loadPriceList(config), size) };
}
