/**
 * The spec's rules are named one way everywhere: the table in README.md beside this file lists
 * each rule and the test file whose titles name it; titles and source comments name rules as
 * the spec numbers them ("push rule 6", "global version rules 2 and 3", "States"), and only rules
 * that exist.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../package/packed.js';

const SECTIONS = ['States', 'Errors', 'Limits', 'Versioning'];
const rows = [
  ...readFileSync(join(ROOT, 'test/spec/README.md'), 'utf8').matchAll(
    /^\| ((?:pull|push|global version|authentication) rule \d+|States|Errors|Limits|Versioning) \| [^|]+ \| (.+) \|$/gm,
  ),
].map(([, rule, where]) => ({
  rule: rule!,
  file: /^`(test\/[^`]+)`$/.exec(where!)?.[1],
}));
const known = new Set(rows.map(({ rule }) => rule));
const testFiles = files('test', '.test.ts');
const titles = new Map(testFiles.map((file) => [file, titlesOf(readFileSync(join(ROOT, file), 'utf8'))]));

describe('the spec rule index (test/spec/README.md)', () => {
  it('lists every rule of every section, each once', () => {
    const expected = [...numbered('pull', 7), ...numbered('global version', 6), ...numbered('push', 8), ...numbered('authentication', 5), ...SECTIONS];
    expect(rows.map(({ rule }) => rule).sort()).toEqual(expected.sort());
  });

  it('points each tested rule at a file with a test title that names it', () => {
    const missing = rows.filter(({ rule, file }) => file !== undefined && !(titles.get(file) ?? []).some((title) => rulesIn(title, true).includes(rule)));
    expect(missing).toEqual([]);
  });

  it('says why for each rule without a test file', () => {
    const text = readFileSync(join(ROOT, 'test/spec/README.md'), 'utf8');
    for (const { rule } of rows.filter(({ file }) => file === undefined))
      expect(text, rule).toMatch(new RegExp(`^\\| ${rule} \\| [^|]+ \\| not tested[^|]*: [^|]+ \\|$`, 'm'));
  });
});

describe('rule names in tests and sources', () => {
  it('name only rules that exist, always with their section', () => {
    const wrong: string[] = [];
    for (const [file, list] of titles) {
      for (const title of list) {
        for (const rule of rulesIn(title, true)) if (!known.has(rule)) wrong.push(`${file}: "${title}" names ${rule}`);
        if (unsectioned(title)) wrong.push(`${file}: "${title}" numbers a rule without its section`);
      }
    }
    for (const file of files('src', '.ts')) {
      const text = readFileSync(join(ROOT, file), 'utf8').replace(/\n\s*(\*|\/\/)\s*/g, ' ');
      for (const rule of rulesIn(text, false)) if (!known.has(rule)) wrong.push(`${file} names ${rule}`);
      if (unsectioned(text)) wrong.push(`${file} numbers a rule without its section`);
    }
    expect(wrong).toEqual([]);
  });
});

const REFERENCE = /\b(pull|push|global version|authentication) rules? (\d+(?:(?:, | and | to |-)\d+)*)/gi;

/** The rules a text names: "push rules 2, 3 and 8" is three; `sections` also counts "States"…. */
function rulesIn(text: string, sections: boolean): string[] {
  const found: string[] = [];
  for (const [, section, numbers] of text.matchAll(REFERENCE)) {
    for (const part of numbers!.split(/, | and /)) {
      const [from, to = from] = part.split(/ to |-/).map(Number);
      for (let n = from!; n <= to!; n++) found.push(`${section!.toLowerCase()} rule ${n}`);
    }
  }
  if (sections) for (const section of SECTIONS) if (new RegExp(`\\b${section}\\b`).test(text)) found.push(section);
  return found;
}

/** Whether `text` numbers a rule ("rule 9") other than as part of a section's reference. */
function unsectioned(text: string): boolean {
  return /\brules? \d/i.test(text.replace(REFERENCE, ''));
}

function titlesOf(source: string): string[] {
  return [...source.matchAll(/\b(?:describe|it|test)(?:\.\w+)*(?:\([^()]*\))?\(\s*(['"`])((?:\\.|(?!\1)[^\\])*)\1/g)].map(([, , title]) => title!);
}

function files(folder: string, suffix: string): string[] {
  return readdirSync(join(ROOT, folder), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith(suffix) && !name.includes('node_modules'))
    .map((name) => join(folder, name));
}

function numbered(section: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `${section} rule ${i + 1}`);
}
