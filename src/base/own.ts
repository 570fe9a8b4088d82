/**
 * Sets `object[key]` as an own, enumerable property, whatever the key: assigning `"__proto__"`
 * (a legal JSON key, and a client ID a client may choose) would set the object's prototype
 * instead, and the key would be lost from what is sent or stored.
 */
export function setOwn(object: object, key: string, value: unknown): void {
  Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
}
