// The reference tokenizer for k3's differential test: tiktoken (the Rust crate, as WASM) with
// the verbatim Kimi-K2 pattern and ranks read from a GGUF's vocabulary.
//
// usage: node tiktoken_oracle.cjs MODEL.gguf STRINGS.json OUT.json
// STRINGS.json is a JSON array of strings. OUT.json receives one object per string:
// {"ids": encode_ordinary(text), "ids_parse_special": encode(text, "all")}.
// The GGUF is parsed here, independently of k3: token strings are GPT-2 bytes_to_unicode
// images of their bytes; NORMAL tokens (type 1) are the ranks (rank = id, as in tiktoken's own
// Kimi vocabulary) and CONTROL tokens (type 3) are the special tokens.
"use strict";
const fs = require("fs");
const { Tiktoken } = require("tiktoken");

const KIMI_K2_PATTERN = [
  "[\\p{Han}]+",
  "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
  "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
  "\\p{N}{1,3}",
  " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*",
  "\\s*[\\r\\n]+",
  "\\s+(?!\\S)",
  "\\s+",
].join("|");

// Reads the metadata of a GGUF file (v2/v3) into a Map key -> value.
function readGgufMetadata(path) {
  const buf = fs.readFileSync(path);
  let at = 0;
  const u32 = () => { const v = buf.readUInt32LE(at); at += 4; return v; };
  const u64 = () => { const v = buf.readBigUInt64LE(at); at += 8; return Number(v); };
  const str = () => { const n = u64(); const s = buf.toString("utf8", at, at + n); at += n; return s; };
  const scalar = {
    0: () => buf.readUInt8(at++), 1: () => buf.readInt8(at++),
    2: () => { const v = buf.readUInt16LE(at); at += 2; return v; },
    3: () => { const v = buf.readInt16LE(at); at += 2; return v; },
    4: u32, 5: () => { const v = buf.readInt32LE(at); at += 4; return v; },
    6: () => { const v = buf.readFloatLE(at); at += 4; return v; },
    7: () => buf.readUInt8(at++) !== 0, 8: str,
    10: u64, 11: () => { const v = buf.readBigInt64LE(at); at += 8; return Number(v); },
    12: () => { const v = buf.readDoubleLE(at); at += 8; return v; },
  };
  const value = (type) => {
    if (type !== 9) return scalar[type]();
    const elementType = u32();
    const n = u64();
    const items = new Array(n);
    for (let i = 0; i < n; i++) items[i] = value(elementType);
    return items;
  };
  if (buf.toString("latin1", 0, 4) !== "GGUF") throw new Error(`${path}: not a GGUF file`);
  at = 4;
  u32();  // version
  u64();  // tensor count
  const nKv = u64();
  const metadata = new Map();
  for (let i = 0; i < nKv; i++) {
    const key = str();
    metadata.set(key, value(u32()));
  }
  return metadata;
}

// GPT-2's bytes_to_unicode, inverted: code point -> byte.
function unicodeToByte() {
  const printable = [];
  for (let b = 0x21; b <= 0x7e; b++) printable.push(b);
  for (let b = 0xa1; b <= 0xac; b++) printable.push(b);
  for (let b = 0xae; b <= 0xff; b++) printable.push(b);
  const map = new Map();
  for (const b of printable) map.set(b, b);
  let extra = 0;
  for (let b = 0; b < 256; b++) if (!printable.includes(b)) map.set(256 + extra++, b);
  return map;
}

function main() {
  const [modelPath, stringsPath, outPath] = process.argv.slice(2);
  const metadata = readGgufMetadata(modelPath);
  const tokens = metadata.get("tokenizer.ggml.tokens");
  const types = metadata.get("tokenizer.ggml.token_type");
  const toByte = unicodeToByte();
  const rankLines = [];
  const special = {};
  tokens.forEach((text, id) => {
    if (types[id] === 1) {
      const bytes = Buffer.from(Array.from(text, (ch) => {
        const b = toByte.get(ch.codePointAt(0));
        if (b === undefined) throw new Error(`token ${id}: ${ch} is not a bytes_to_unicode image`);
        return b;
      }));
      rankLines.push(`${bytes.toString("base64")} ${id}`);
    } else if (types[id] === 3) {
      special[text] = id;
    }
  });
  const encoder = new Tiktoken(rankLines.join("\n"), special, KIMI_K2_PATTERN);
  const strings = JSON.parse(fs.readFileSync(stringsPath, "utf8"));
  const results = strings.map((text) => ({
    ids: Array.from(encoder.encode_ordinary(text)),
    ids_parse_special: Array.from(encoder.encode(text, "all")),
  }));
  encoder.free();
  fs.writeFileSync(outPath, JSON.stringify(results));
}

main();
