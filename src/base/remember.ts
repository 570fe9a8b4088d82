/** Sets `key` in a map kept to `size` entries (a memo), the longest-known going first. */
export function remember<K, V>(map: Map<K, V>, key: K, value: V, size: number): void {
  map.delete(key);
  if (map.size >= size) map.delete(map.keys().next().value!);
  map.set(key, value);
}
