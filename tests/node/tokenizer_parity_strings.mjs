// Test strings for the tokenizer parity test (tokenizer_parity_test.mjs), generated
// deterministically from a seed: English with contractions, code, JSON, Chinese and other
// scripts, emoji, whitespace runs, the vocabulary's added tokens inside text, numbers, and
// random Unicode.
//
// Most random Unicode is drawn from blocks assigned before Unicode 14 and unchanged since:
// switchyard's pre-tokenizer patterns run on PCRE2's Unicode tables (Debian 12: Unicode 14)
// and NFC on ICU's (Unicode 15), Node's on Unicode 17, so a letter assigned after 14 can
// split differently (tokenizer/README.md says so); a smaller share is any code point.

// mulberry32: a small seeded PRNG.
export function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n) => Math.floor(next() * n);
  return { next, int, pick: (arr) => arr[int(arr.length)], chance: (p) => next() < p };
}

const WORDS = (
  'the of and to in is you that it he was for on are as with his they at be this have from ' +
  'or one had by word but not what all were we when your can said there use an each which ' +
  'she do how their if will up other about out many then them these so some her would make ' +
  'like him into time has look two more write go see number no way could people my than first ' +
  'water been call who oil its now find long down day did get come made may part agent tool ' +
  'scheduler cache token request response model context function error retry latency budget ' +
  'Python JavaScript Rust kubernetes GPU tensor HTTP JSON API OpenAI Llama Qwen internationalization'
).split(' ');
const CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ve",
  "'M", "'LL", "'D", "’s", "'x", "'"];
const PUNCT = ['.', ',', '!', '?', ';', ':', '...', ' -', ' —', '"', "'", '(', ')', '?!'];
const WS = [' ', '  ', '\t', '\n', '\r\n', '\r', '\n\n', '\u00a0', '\u2009', '\u3000', '\u0085',
  '\ufeff', '\u000b', '\u000c', '\u2028', '\u200b', ' \n ', '\t\t', '    '];
const EMOJI = ['😀', '🚀', '👍🏽', '👩‍💻', '👨‍👩‍👧‍👦', '🏳️‍🌈', '🇯🇵', '🇺🇸', '1️⃣', '❤️', '✨', '🔥',
  '🧪', '🤖', '☕', '⚙️', '🐍', '🦀', '📦', '✅', '❌', '🙏🏿'];
const CHINESE = ['你好', '世界', '调度器', '缓存', '模型', '推理', '我们', '今天', '天气', '很好',
  '请求', '代码', '函数', '错误', '数据', '中文分词', '东京', '北京'];
const CJK_PUNCT = ['，', '。', '！', '？', '、', '；', '：', '“', '”', '《', '》', '（', '）'];
// [first, last] code point ranges: old, fully assigned blocks (see the header comment).
const RANGES = [
  [0x20, 0x7e], [0xa0, 0x17f], [0x180, 0x24f], [0x300, 0x36f], [0x391, 0x3c9], [0x400, 0x4ff],
  [0x5d0, 0x5ea], [0x620, 0x64a], [0x660, 0x669], [0x905, 0x939], [0x966, 0x96f],
  [0xe01, 0xe30], [0x1100, 0x1112], [0x1161, 0x1175], [0x11a8, 0x11c2], [0x1e00, 0x1eff],
  [0x2000, 0x206f], [0x2100, 0x214f], [0x2150, 0x2188], [0x2190, 0x21ff], [0x2200, 0x22ff],
  [0x2500, 0x257f], [0x2600, 0x26ff], [0x2700, 0x27bf], [0x3040, 0x3096], [0x30a1, 0x30fa],
  [0x4e00, 0x9fa5], [0xac00, 0xd7a3], [0xff01, 0xff5e], [0x1d400, 0x1d454],
  [0x1f300, 0x1f5ff], [0x1f600, 0x1f64f], [0x20000, 0x2a6d6],
];
// Characters NFC changes (singletons, decomposed forms) and combining marks.
const NFC_BAIT = ['e\u0301', 'A\u030a', '\u212b', '\u212a', '\u2126', '\u1e9b\u0323', 'o\u0308\u0304',
  '\u1100\u1161\u11a8', '\u0344', '\u037e', '\u0387', 'n\u0303', '\u00c5', 'q\u0307\u0323'];

function words(r, n) {
  const out = [];
  for (let i = 0; i < n; ++i) {
    let w = r.pick(WORDS);
    if (r.chance(0.15)) w = w[0].toUpperCase() + w.slice(1);
    if (r.chance(0.05)) w = w.toUpperCase();
    if (r.chance(0.1)) w += r.pick(CONTRACTIONS);
    if (r.chance(0.12)) w += r.pick(PUNCT);
    out.push(w);
  }
  return out.join(' ');
}

function ident(r) {
  const base = r.pick(WORDS).replace(/[^A-Za-z]/g, '') || 'x';
  const style = r.int(4);
  const other = r.pick(WORDS).replace(/[^A-Za-z]/g, '') || 'y';
  if (style === 0) return base + '_' + other;
  if (style === 1) return base + other[0].toUpperCase() + other.slice(1);
  if (style === 2) return base.toUpperCase() + '_' + r.int(100);
  return base;
}

function code(r) {
  const ind = r.pick(['  ', '    ', '\t', '']);
  const a = ident(r), b = ident(r), n = r.int(1000);
  const t = [
    `def ${a}(${b}, n=${n}):\n${ind}return [x ** 2 for x in ${b} if x % ${n % 7 + 2} == 0]\n`,
    `for (int i = 0; i < ${n}; ++i) {\n${ind}${a}[i] += ${b}(i) * 0x${n.toString(16)};\n}\n`,
    `const ${a} = async (${b}) => {\n${ind}await fetch(\`/api/v1/${b}?id=\${${b}.id}\`);\n};`,
    `if ${a} != nil {\n${ind}return fmt.Errorf("${b}: %w", err)\n}`,
    `$ grep -rn "${a}" src/ | wc -l && echo $? >> /tmp/${b}.log`,
    `@@ -${n},7 +${n},8 @@\n-${ind}${a}();\n+${ind}${a}(${b});\n`,
    `## ${a}\n\n- [ ] ${b}\n- [x] \`${a}.${b}()\`\n\n\`\`\`python\nprint(${a})\n\`\`\``,
    `SELECT ${a}, COUNT(*) FROM ${b} WHERE id >= ${n} GROUP BY 1;`,
    `<div class="${a}" data-n='${n}'>&lt;${b}&gt;</div>`,
    `    ${a}:\n      - ${b}: ${n}\n      - "${a}-${b}"`,
  ];
  return r.pick(t);
}

function jsonValue(r, depth) {
  const k = r.int(depth > 2 ? 4 : 7);
  if (k === 0) return r.int(2000000) - 1000000;
  if (k === 1) return Number((r.next() * 1e4 - 5e3).toFixed(r.int(6)));
  if (k === 2) return r.chance(0.5) ? words(r, 1 + r.int(6)) : ident(r);
  if (k === 3) return r.pick([true, false, null]);
  if (k <= 5) {
    const o = {};
    for (let i = r.int(5); i >= 0; --i) o[ident(r)] = jsonValue(r, depth + 1);
    return o;
  }
  return Array.from({ length: r.int(4) }, () => jsonValue(r, depth + 1));
}

function json(r) {
  const v = { name: ident(r), arguments: jsonValue(r, 0) };
  return JSON.stringify(v, null, r.pick([0, 2, 4, '\t']));
}

function chinese(r) {
  let s = '';
  for (let i = 1 + r.int(12); i > 0; --i) {
    const k = r.int(10);
    if (k < 5) s += r.pick(CHINESE);
    else if (k < 7) s += String.fromCodePoint(0x4e00 + r.int(0x9fa5 - 0x4e00));
    else if (k < 9) s += r.pick(CJK_PUNCT);
    else s += r.chance(0.5) ? ' ' + r.pick(WORDS) + ' ' : String(r.int(2025));
  }
  return s;
}

function emoji(r) {
  let s = '';
  for (let i = 1 + r.int(6); i > 0; --i) s += r.pick(EMOJI) + (r.chance(0.3) ? ' ' : '');
  return r.chance(0.5) ? words(r, 2) + ' ' + s : s;
}

function whitespace(r) {
  let s = '';
  for (let i = 1 + r.int(10); i > 0; --i) {
    const k = r.int(3);
    if (k === 0) s += r.pick(WORDS);
    else for (let j = 1 + r.int(5); j > 0; --j) s += r.pick(WS);
  }
  return s;
}

function numbers(r) {
  const k = r.int(6);
  if (k === 0) return String(r.int(1e9)) + String(r.int(1e9));
  if (k === 1) return (r.next() * 1e6).toFixed(r.int(8));
  if (k === 2) return `${r.int(1e6).toLocaleString('en-US')} and ${r.int(99)}%`;
  if (k === 3) return r.pick(['½', '²³', 'Ⅻ', '٣٤٥', '１２３', '१२३', '๑๒', '⑦', '0x7fff', '1e-9']);
  if (k === 4) return `v${r.int(10)}.${r.int(20)}.${r.int(100)}-rc${r.int(5)}`;
  return `${r.int(24)}:${String(r.int(60)).padStart(2, '0')} 2024-0${1 + r.int(9)}-1${r.int(10)}`;
}

function randomUnicode(r) {
  let s = '';
  for (let i = 1 + r.int(30); i > 0; --i) {
    if (r.chance(0.1)) {
      s += r.pick(NFC_BAIT);
      continue;
    }
    const [lo, hi] = r.pick(RANGES);
    s += String.fromCodePoint(lo + r.int(hi - lo + 1));
  }
  return s;
}

// Code points from anywhere but surrogates, letters, numbers and marks: symbols,
// punctuation, controls, private use, unassigned. Letters, numbers and marks come from
// RANGES only: one assigned after Unicode 14 (U+13460 Egyptian hieroglyphs, Unicode 16)
// splits differently in PCRE2's tables, and can change the ids.
const LETTER_NUMBER_MARK = /[\p{L}\p{N}\p{M}]/u;
function anyCodePoints(r) {
  let s = '';
  for (let i = 1 + r.int(20); i > 0; --i) {
    let c;
    do {
      const cp = r.chance(0.7) ? r.int(0x10000) : r.int(0x110000);
      c = cp >= 0xd800 && cp < 0xe000 ? 'a' : String.fromCodePoint(cp);
    } while (LETTER_NUMBER_MARK.test(c));
    s += c;
  }
  return s;
}

function contractions(r) {
  const c = r.pick(CONTRACTIONS);
  const w = r.pick(WORDS);
  return r.pick([`${w}${c}`, `${c}${w}`, ` ${c} `, `${w.toUpperCase()}${c.toUpperCase()}`,
    `I${c}`, `y'all'd've`, `${c}${c}`, `don't won't can't shan't`]);
}

// A fragment with the vocabulary's added tokens (whole, cut short, doubled) in text.
function specials(r, added) {
  const t = r.pick(added);
  const k = r.int(8);
  if (k === 0) return t.slice(0, 1 + r.int(t.length - 1));
  if (k === 1) return t + t;
  if (k === 2) return `<${t}>`;
  if (k === 3) return ` ${t} `;
  if (k === 4) return `${r.pick(WS)}${t}${r.pick(WS)}`;
  return words(r, r.int(3)) + t + words(r, r.int(3));
}

const KINDS = [
  [words, 3], [code, 3], [json, 3], [chinese, 2], [emoji, 1], [whitespace, 2], [numbers, 2],
  [randomUnicode, 2], [anyCodePoints, 1], [contractions, 1], [specials, 2],
];

function fragment(r, added) {
  let total = 0;
  for (const [, w] of KINDS) total += w;
  let x = r.int(total);
  for (const [f, w] of KINDS) {
    if (x < w) return f === words ? words(r, 1 + r.int(20)) : f(r, added);
    x -= w;
  }
  return '';
}

// `n` strings for a vocabulary whose added token contents are `added`.
export function generateStrings(seed, n, added) {
  const r = rng(seed);
  const out = ['', ' ', '\n', ...added];
  while (out.length < n) {
    const parts = r.chance(0.05) ? 20 + r.int(40) : 1 + r.int(5);
    let s = '';
    for (let i = 0; i < parts; ++i) s += (i && r.chance(0.5) ? r.pick(WS) : '') + fragment(r, added);
    out.push(s);
  }
  return out;
}
