/**
 * A scenario's `capacity`: the Node object's status.capacity as far as eviction reads it, which
 * is its huge pages (`hugepages-<page size>` → bytes reserved in pages of that size). Any other
 * resource is refused rather than ignored: no eviction rule reads it, and a scenario that names
 * it expects an effect it would not get.
 */
import { badValue } from '../errors';
import { HUGEPAGES_PREFIX } from '../policy/hugepages';
import { Quantity, QuantityError } from '../policy/quantity';
import { child, MAX_AMOUNT, obj, quantity } from './scenario-fields';

/** The node's huge page capacity in bytes, summed over page sizes (0 when absent). */
export function hugePagesCapacity(field: string, v: unknown): number {
  if (v === undefined || v === null) return 0;
  let total = 0;
  for (const [k, x] of Object.entries(obj(field, v))) {
    const f = child(field, k);
    if (!k.startsWith(HUGEPAGES_PREFIX) || !validPageSize(k.slice(HUGEPAGES_PREFIX.length))) {
      throw badValue(f, x, 'unknown resource: only hugepages-<page size> (e.g. hugepages-2Mi) is read from the node capacity');
    }
    total += quantity(f, x).value();
    if (total > MAX_AMOUNT) throw badValue(f, x, `too large: the capacities add up past ${MAX_AMOUNT} (2^53-1)`);
  }
  return total;
}

function validPageSize(text: string): boolean {
  try {
    return Quantity.parse(text).sign() > 0;
  } catch (e) {
    if (e instanceof QuantityError) return false;
    throw e;
  }
}
