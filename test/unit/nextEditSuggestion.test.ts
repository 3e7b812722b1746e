// Next-edit suggestions in the editor (issue #38), the parts without VS Code: how an edit is drawn by
// its shape, the chain through an answer's edits, the session's states and context keys, the recorded
// answers the real-editor tests replay, the block image.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { blockImage, editorLineHeight, expandTabs } from '../../src/nextEditSession/blockImage';
import { nearestEdit, remainingAfter, shifted } from '../../src/nextEditSession/chain';
import { RecordedEdits } from '../../src/nextEditSession/historyAdapter';
import { type ContextKeys, type NextEditOutcome, NextEditSession, type SessionHost, type ShownSuggestion } from '../../src/nextEditSession/session';
import { classifyNextEdit, isSubsequence, NEAR_LINES, stringShapeText } from '../../src/nextEditSession/shape';
import { editsBetween, ReplayNextEditProvider } from '../../src/nextEditSession/replayProvider';
import { describeSuggestion, NextEditStats, requestFigures } from '../../src/nextEditSession/stats';
import type { TextReplacement } from '../../src/nextEdit/types';

/** `|` marks the cursor; returns the text without it and the cursor's offset. */
function withCursor(marked: string): { text: string; cursor: number } {
  const cursor = marked.indexOf('|');
  return { text: marked.slice(0, cursor) + marked.slice(cursor + 1), cursor };
}

function classify(marked: string, edit: (text: string) => TextReplacement, visible = [{ start: 0, end: 1000 }]) {
  const { text, cursor } = withCursor(marked);
  const t = stringShapeText(text);
  return classifyNextEdit(t, t.slice, edit(text), cursor, visible);
}

/** The replacement of the `n`th (0-based) occurrence of `find` by `by`. */
const replace =
  (find: string, by: string, n = 0) =>
  (text: string): TextReplacement => {
    let at = -1;
    for (let i = 0; i <= n; i++) at = text.indexOf(find, at + 1);
    assert.ok(at >= 0, `${find} #${n} in the text`);
    return { start: at, end: at + find.length, text: by };
  };

describe('next-edit shape: how each edit is drawn', () => {
  const table: { name: string; marked: string; edit: (text: string) => TextReplacement; render: string; far?: boolean; ghost?: string }[] = [
    { name: 'insertion at the cursor → ghost text', marked: 'const a = |\n', edit: (t) => ({ start: t.indexOf('\n'), end: t.indexOf('\n'), text: '42;' }), render: 'ghost', ghost: '42;' },
    {
      name: 'several lines inserted at the cursor → ghost text (VS Code draws the lines below)',
      marked: 'if (x) {|\n}\n',
      edit: (t) => ({ start: 8, end: 8, text: '\n  go();' + (t ? '' : '') }),
      render: 'ghost',
      ghost: '\n  go();',
    },
    {
      name: 'a change on the cursor line that only adds after the cursor → ghost text with a replace range',
      marked: 'call(a|)\n',
      edit: replace('a)', 'a, b)'),
      render: 'ghost',
      ghost: 'a, b)',
    },
    { name: 'a change on the cursor line that deletes → inline decoration', marked: 'let count| = 0;\n', edit: replace('count', 'sum'), render: 'inline' },
    { name: 'an insertion before the cursor on its line → inline decoration', marked: 'foo(a)|\n', edit: (t) => ({ start: 4, end: 4, text: 'b, ' + t.slice(0, 0) }), render: 'inline' },
    { name: 'a change on another line → inline decoration', marked: 'let sum| = 0;\nreturn count;\n', edit: replace('count', 'sum'), render: 'inline' },
    { name: 'a deletion → deletion decoration', marked: 'a|\nconsole.log(x);\nb\n', edit: replace('console.log(x);\n', ''), render: 'deletion' },
    { name: 'several new lines elsewhere → block image', marked: 'a|\nb\nc\n', edit: replace('b', 'b1\nb2'), render: 'block' },
  ];
  for (const row of table) {
    it(row.name, () => {
      const shape = classify(row.marked, row.edit);
      assert.equal(shape.render, row.render);
      assert.equal(shape.far, row.far ?? false);
      if (row.ghost !== undefined) assert.equal(shape.ghost?.text, row.ghost);
    });
  }

  it('an edit more than NEAR_LINES away is far (Tab jumps first), even where ghost text would do', () => {
    const lines = Array.from({ length: NEAR_LINES + 5 }, (_, i) => `line${i}`);
    const marked = `|${lines.join('\n')}\n`;
    const far = classify(marked, replace(`line${NEAR_LINES + 2}`, 'changed'));
    assert.equal(far.far, true);
    assert.equal(far.distance, NEAR_LINES + 2);
    const near = classify(marked, replace(`line${NEAR_LINES}`, 'changed'));
    assert.equal(near.far, false);
  });

  it('an edit outside the visible lines is far', () => {
    const shape = classify('a|\nb\nc\nd\n', replace('d', 'D'), [{ start: 0, end: 1 }]);
    assert.equal(shape.far, true);
  });

  it('the block shows only the lines that change, beside the first of them, clear of the widest line', () => {
    const shape = classify('x|\nkeep\nold line\nkeep too\n', (t) => ({ start: t.indexOf('keep\n'), end: t.indexOf('keep too'), text: 'keep\nnew one\nnew two\n' }));
    assert.equal(shape.render, 'block');
    assert.deepEqual(shape.block?.lines, ['new one', 'new two']);
    assert.equal(shape.block?.anchorLine, 2);
    assert.ok((shape.block?.widestColumn ?? 0) >= 'keep too'.length);
  });

  it('new whole lines are drawn beside the line above them', () => {
    const shape = classify('x|\nfirst\nlast\n', (t) => ({ start: t.indexOf('last'), end: t.indexOf('last'), text: 'mid1\nmid2\n' }));
    assert.equal(shape.render, 'block');
    assert.deepEqual(shape.block?.lines, ['mid1', 'mid2']);
    assert.equal(shape.block?.anchorLine, 1);
  });

  it('isSubsequence', () => {
    assert.equal(isSubsequence('ac', 'abc'), true);
    assert.equal(isSubsequence('ca', 'abc'), false);
    assert.equal(isSubsequence('', 'x'), true);
  });
});

describe('next-edit chain', () => {
  it('the edits after an applied one move by what it added; the ones before stay; an overlapping one goes', () => {
    const applied = { start: 10, end: 15, text: 'ab' };
    const rest = remainingAfter(applied, [{ start: 0, end: 3, text: 'x' }, { start: 12, end: 20, text: 'overlap' }, { start: 30, end: 35, text: 'y' }, applied]);
    assert.deepEqual(rest, [
      { start: 0, end: 3, text: 'x' },
      { start: 27, end: 32, text: 'y' },
    ]);
  });

  it('the edit shown first is the nearest by lines, ties broken for the one after the cursor', () => {
    const t = stringShapeText('a\nb\nc\nd\ne\n');
    const lineOf = (o: number) => t.positionAt(o).line;
    const edits = [
      { start: 0, end: 1, text: 'A' },
      { start: 4, end: 5, text: 'C' },
      { start: 8, end: 9, text: 'E' },
    ];
    // The cursor on line 3 ('d'): lines 2 and 4 are 1 away; line 4 is after the cursor.
    assert.equal(nearestEdit(edits, 6, lineOf)?.text, 'E');
    assert.equal(nearestEdit(edits, 4, lineOf)?.text, 'C');
    assert.deepEqual(shifted([{ start: 1, end: 2, text: 'x' }], 100), [{ start: 101, end: 102, text: 'x' }]);
  });
});

/** A host that records what the session asks of it. */
function recordingHost(text: string) {
  const t = stringShapeText(text);
  const calls: string[] = [];
  const ended: [ShownSuggestion, NextEditOutcome][] = [];
  let keys: ContextKeys = { shown: false, far: false };
  let rendered: ShownSuggestion | null = null;
  const host: SessionHost = {
    schedule: (ms) => calls.push(`schedule ${ms}`),
    cancel: () => calls.push('cancel'),
    render: (s) => ((rendered = s), calls.push(s ? `render ${s.shape.render}` : 'clear')),
    setKeys: (k) => (keys = k),
    jump: (s) => calls.push(`jump ${s.edit.start}`),
    apply: (s) => calls.push(`apply ${s.edit.start}`),
    ended: (s, outcome) => ended.push([s, outcome]),
    classify: (edit, cursor) => classifyNextEdit(t, t.slice, edit, cursor, [{ start: 0, end: 1000 }]),
    lineOf: (offset) => t.positionAt(offset).line,
  };
  return { host, calls, ended, keys: () => keys, rendered: () => rendered };
}

describe('next-edit session: states, keys, chain', () => {
  const lines = Array.from({ length: 30 }, (_, i) => `  use(count${i});`);
  const text = `let sum = 0;\n${lines.join('\n')}\n`;
  const far = { start: text.indexOf('count20'), end: text.indexOf('count20') + 5, text: 'sum' };
  const near = { start: text.indexOf('count1)'), end: text.indexOf('count1)') + 5, text: 'sum' };

  it('a keystroke schedules a request after the debounce; another keystroke cancels and schedules again', () => {
    const h = recordingHost(text);
    const session = new NextEditSession(h.host, () => 300);
    session.edited();
    session.edited();
    assert.deepEqual(h.calls, ['cancel', 'schedule 300', 'cancel', 'schedule 300']);
  });

  it('far edit: keys say shown + far; Tab jumps (keys: near), Tab applies; the chain asks again at once', () => {
    const h = recordingHost(text);
    const session = new NextEditSession(h.host, () => 300);
    session.edited();
    const id = session.requestStarted(7);
    const shown = session.answered(id, [far]);
    assert.equal(shown?.shape.far, true);
    assert.deepEqual(h.keys(), { shown: true, far: true });
    assert.equal(session.tab(), true);
    assert.ok(h.calls.includes(`jump ${far.start}`));
    assert.deepEqual(h.keys(), { shown: true, far: false });
    // The cursor event of the jump itself does not remove it.
    session.cursorMoved(far.start);
    assert.ok(session.shown);
    assert.equal(session.tab(), true);
    assert.ok(h.calls.includes(`apply ${far.start}`));
    session.applied(far.start + 3);
    assert.deepEqual(
      h.ended.map(([, o]) => o),
      ['applied'],
    );
    assert.equal(h.calls.at(-1), 'schedule 0');
    assert.deepEqual(h.keys(), { shown: false, far: false });
  });

  it('an answer with several edits: after one is applied the next is shown at once, shifted', () => {
    const h = recordingHost(text);
    const session = new NextEditSession(h.host, () => 300);
    const id = session.requestStarted(near.start);
    session.answered(id, [near, far]);
    assert.equal(session.shown?.edit, near);
    session.applied(near.start + 3);
    const next = session.shown;
    assert.equal(next?.edit.start, far.start - 2);
    assert.equal(next?.chainIndex, 1);
    assert.ok(!h.calls.includes('schedule 0'));
  });

  it('a streamed first edit stays shown when the whole answer arrives', () => {
    const h = recordingHost(text);
    const session = new NextEditSession(h.host, () => 300);
    const id = session.requestStarted(7);
    session.answered(id, [far]);
    session.answered(id, [near, far]);
    assert.equal(session.shown?.edit, far);
    assert.deepEqual(session.shown?.others, [near]);
  });

  it('Escape dismisses; typing removes it; a cursor move away removes it; nothing shown: Tab and Escape are not ours', () => {
    for (const [act, outcome] of [
      [(s: NextEditSession) => s.escape(), 'dismissed'],
      [(s: NextEditSession) => s.edited(), 'typedOver'],
      [(s: NextEditSession) => s.cursorMoved(3), 'movedAway'],
      [(s: NextEditSession) => s.fimShown(), 'fimPriority'],
    ] as const) {
      const h = recordingHost(text);
      const session = new NextEditSession(h.host, () => 300);
      session.answered(session.requestStarted(7), [near]);
      act(session);
      assert.equal(session.shown, null);
      assert.deepEqual(
        h.ended.map(([, o]) => o),
        [outcome],
      );
      assert.deepEqual(h.keys(), { shown: false, far: false });
      assert.equal(session.tab(), false);
      assert.equal(session.escape(), false);
    }
  });

  it('a ghost-text suggestion leaves Tab to VS Code (keys off)', () => {
    const h = recordingHost('let a = \n');
    const session = new NextEditSession(h.host, () => 300);
    session.answered(session.requestStarted(8), [{ start: 8, end: 8, text: '1;' }]);
    assert.equal(session.shown?.shape.render, 'ghost');
    assert.deepEqual(h.keys(), { shown: false, far: false });
  });

  it('an answer for a request no longer wanted is dropped; a cursor move cancels the request in flight', () => {
    const h = recordingHost(text);
    const session = new NextEditSession(h.host, () => 300);
    const old = session.requestStarted(7);
    session.cursorMoved(9);
    assert.equal(session.wants(old), false);
    assert.equal(session.answered(old, [near]), null);
    assert.ok(h.calls.includes('cancel'));
  });
});

describe('next-edit replay (the real-editor tests backend)', () => {
  it('editsBetween: line by line when the line count holds, else one replacement', () => {
    assert.deepEqual(editsBetween('a count\nb\nc count\n', 'a sum\nb\nc sum\n'), [
      { start: 2, end: 7, text: 'sum' },
      { start: 12, end: 17, text: 'sum' },
    ]);
    assert.deepEqual(editsBetween('a\nb\n', 'a\nx\ny\nb\n'), [{ start: 2, end: 2, text: 'x\ny\n' }]);
    assert.deepEqual(editsBetween('same', 'same'), []);
  });

  it('serves the recorded answer for the recorded text, streams its first edit, and nothing for any other text', async () => {
    const source = new ReplayNextEditProvider([{ before: 'let a = 1;\na;\n', after: 'let a = 1;\na + 1;\n' }]);
    const streamed: TextReplacement[] = [];
    const hit = await source.nextEdit({ path: 'x.ts', text: 'let a = 1;\na;\n', cursorOffset: 0, events: [], mode: 'plain' }, new AbortController().signal, (e) => streamed.push(e));
    assert.deepEqual(hit.edits, [{ start: 12, end: 12, text: ' + 1' }]);
    assert.deepEqual(streamed, hit.edits);
    const miss = await source.nextEdit({ path: 'x.ts', text: 'other', cursorOffset: 0, events: [], mode: 'plain' }, new AbortController().signal);
    assert.equal(miss.edits.length, 0);
    assert.equal(miss.noSuggestion?.reason, 'unchanged');
  });
});

describe('next-edit readout', () => {
  it('counts shown / applied / dismissed, time to the first edit, tokens per evaluation, copy acceptance', () => {
    const stats = new NextEditStats();
    stats.requested();
    const stats0 = {
      promptTokens: 100,
      reusedPromptTokens: 0,
      generatedTokens: 40,
      promptMs: 10,
      timeToFirstTokenMs: 20,
      totalMs: 400,
      stopReason: 'eos' as const,
      speculation: {
        mode: 'hybrid' as const,
        targetEvaluations: 10,
        targetTokensEvaluated: 60,
        draftEvaluations: 0,
        bySource: {
          ngram: { steps: 0, proposedTokens: 0, acceptedTokens: 0 },
          draft: { steps: 0, proposedTokens: 0, acceptedTokens: 0 },
          lookahead: { steps: 0, proposedTokens: 0, acceptedTokens: 0 },
          copy: { steps: 8, proposedTokens: 40, acceptedTokens: 30 },
        },
        targetMs: 300,
        draftMs: 0,
      },
    };
    const figures = requestFigures({ timeToFirstEditMs: 120, stats: stats0 as never });
    assert.equal(figures.tokensPerEvaluation, 4);
    assert.deepEqual(figures.bySource, { copy: { accepted: 30, proposed: 40 } }, 'the sources that proposed');
    stats.answered(figures);
    stats.shown('inline', 450);
    stats.ended('applied');
    stats.shown('block', 500);
    stats.ended('dismissed');
    const s = stats.summary();
    assert.deepEqual([s.shown, s.applied, s.dismissed, s.firstEditMs, s.tokensPerEvaluation, s.acceptance], [2, 1, 1, 120, 4, { copy: 0.75 }]);
    assert.match(stats.tooltipLine() ?? '', /Next edits: 2 shown, 1 applied, 1 dismissed · first edit 120 ms · 4\.00 tokens\/evaluation · window copy 75% accepted/);
    const rows = Object.fromEntries(stats.section().rows);
    assert.equal(rows['tokens per target evaluation'], '4.00');
    assert.equal(rows['window copy: accepted'], '75% (30/40 tokens)');
  });

  it('one log line per suggestion says what, where, how it was drawn, how it ended, and the times', () => {
    const t = stringShapeText('let sum = 0;\nreturn count;\n');
    const edit = { start: 20, end: 25, text: 'sum' };
    const shape = classifyNextEdit(t, t.slice, edit, 7, []);
    const line = describeSuggestion({ requestId: 1, cursor: 7, edit, shape, others: [], jumped: false, chainIndex: 0 }, 'applied', null, 412);
    assert.equal(line, 'next edit applied: line 2, replace 5 chars with "sum", shown as inline 1 line from the cursor; on screen 412 ms after the last keystroke');
  });
});

describe('next-edit block image and history adapter', () => {
  it('the image is an SVG data URI sized by the lines, escaped, tabs expanded', () => {
    const image = blockImage(['a < b && c', '\tx'], 2, { family: 'Droid Sans Mono, "monospace"', size: 14, lineHeight: 19 }, 'light', 2);
    const svg = Buffer.from(image.uri.replace('data:image/svg+xml;base64,', ''), 'base64').toString('utf8');
    assert.match(svg, /a &lt; b &amp;&amp; c/);
    assert.match(svg, /… 2 more lines/);
    assert.match(svg, /font-family="Droid Sans Mono, &quot;monospace&quot;"/);
    assert.equal(image.height, 3 * 19 + 2);
    assert.equal(expandTabs('\tx', 2), '  x');
    assert.equal(editorLineHeight(14, 0), 19);
    assert.equal(editorLineHeight(14, 1.5), 21);
    assert.equal(editorLineHeight(14, 22), 22);
  });

  it('change events become editHistory events (several changes of one event applied from the end)', () => {
    let now = 1000;
    const recorded = new RecordedEdits(undefined, () => now);
    recorded.track('k', 'let count = 0;\nuse(count);\n');
    recorded.record('k', 'a.ts', [{ offset: 4, deleteCount: 5, text: 'sum' }]);
    now += 5000;
    recorded.record('k', 'a.ts', [
      { offset: 13, deleteCount: 0, text: '// ' },
      { offset: 17, deleteCount: 5, text: 'sum' },
    ]);
    const events = recorded.events();
    assert.equal(events.length, 2);
    assert.match(events[0]!.diff, /-let count = 0;\n\+let sum = 0;/);
    assert.match(events[1]!.diff, /\+\/\/ use\(sum\);/);
  });
});
