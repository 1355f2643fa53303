// FNV-1a (32 bit): the shard hash of the relay index's timer partitions and of the status
// index, which every writer (any process, any language) computes alike.

/** FNV-1a (32 bit) over the UTF-8 of `parts`, a 0 byte between each. */
export function fnv1a(...parts: string[]): number {
  let hash = 0x811c9dc5;
  for (let p = 0; p < parts.length; p++) {
    if (p > 0) hash = Math.imul(hash, 0x01000193); // the 0 byte between parts
    hash = mixUtf8(hash, parts[p]!);
  }
  return hash >>> 0;
}

/**
 * `hash` with the UTF-8 bytes of `text` mixed in, one by one, as `TextEncoder` would write them
 * (a lone surrogate as U+FFFD), without encoding it: a commit hashes its id on every call.
 */
function mixUtf8(hash: number, text: string): number {
  const mix = (byte: number) => hash = Math.imul(hash ^ byte, 0x01000193);
  for (let i = 0; i < text.length; i++) {
    let code = text.charCodeAt(i);
    if (code < 0x80) {
      mix(code);
      continue;
    }
    if (code < 0x800) {
      mix(0xc0 | (code >> 6));
      mix(0x80 | (code & 0x3f));
      continue;
    }
    if ((code & 0xfc00) === 0xd800 && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      code = 0x10000 + ((code - 0xd800) << 10) + (text.charCodeAt(++i) - 0xdc00);
      mix(0xf0 | (code >> 18));
      mix(0x80 | ((code >> 12) & 0x3f));
    } else {
      if ((code & 0xf800) === 0xd800) code = 0xfffd; // a lone surrogate
      mix(0xe0 | (code >> 12));
    }
    mix(0x80 | ((code >> 6) & 0x3f));
    mix(0x80 | (code & 0x3f));
  }
  return hash;
}
