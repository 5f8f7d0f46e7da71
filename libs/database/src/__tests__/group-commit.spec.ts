import { GroupCommit } from '../group-commit.js';

/** A write that records each group it was given and waits for the test to let it finish. */
function gatedWrite(fail: (items: string[]) => boolean = () => false) {
  const groups: Array<{ key: string; items: string[] }> = [];
  const gates: Array<() => void> = [];
  const write = async (key: string, items: string[]) => {
    groups.push({ key, items });
    await new Promise<void>((release) => gates.push(release));
    if (fail(items)) throw new Error(`refused ${items.join(',')}`);
    return items.map((item) => `${key}:${item}`);
  };
  const releaseNext = async () => {
    while (gates.length === 0) await new Promise((r) => setImmediate(r));
    gates.shift()!();
  };
  return { write, groups, releaseNext };
}

describe('GroupCommit', () => {
  it('writes a lone caller at once, and the callers that came meanwhile together in the next write, each answered with its own results', async () => {
    const w = gatedWrite();
    const commit = new GroupCommit(w.write);
    const first = commit.submit('n1', ['a']);
    const second = commit.submit('n1', ['b', 'c']);
    const third = commit.submit('n1', ['d']);
    expect(w.groups).toEqual([{ key: 'n1', items: ['a'] }]);
    await w.releaseNext();
    await expect(first).resolves.toEqual(['n1:a']);
    await w.releaseNext();
    await expect(second).resolves.toEqual(['n1:b', 'n1:c']);
    await expect(third).resolves.toEqual(['n1:d']);
    expect(w.groups).toEqual([
      { key: 'n1', items: ['a'] },
      { key: 'n1', items: ['b', 'c', 'd'] },
    ]);
  });

  it('keeps keys apart: another key writes at once, beside a busy one', async () => {
    const w = gatedWrite();
    const commit = new GroupCommit(w.write);
    const one = commit.submit('n1', ['a']);
    const other = commit.submit('n2', ['b']);
    expect(w.groups.map((g) => g.key)).toEqual(['n1', 'n2']);
    await w.releaseNext();
    await w.releaseNext();
    await expect(one).resolves.toEqual(['n1:a']);
    await expect(other).resolves.toEqual(['n2:b']);
  });

  it('takes at most maxItems per write, never splitting a caller', async () => {
    const w = gatedWrite();
    const commit = new GroupCommit(w.write, 3);
    const all = [commit.submit('n', ['a']), commit.submit('n', ['b', 'c']), commit.submit('n', ['d']), commit.submit('n', ['e', 'f', 'g', 'h'])];
    for (let i = 0; i < 3; i++) await w.releaseNext();
    await Promise.all(all);
    expect(w.groups.map((g) => g.items)).toEqual([['a'], ['b', 'c', 'd'], ['e', 'f', 'g', 'h']]);
  });

  it('runs a failed group again caller by caller: only the caller whose items fail gets the error', async () => {
    const w = gatedWrite((items) => items.includes('poison'));
    const commit = new GroupCommit(w.write);
    const first = commit.submit('n', ['a']);
    const good = commit.submit('n', ['b']);
    const bad = commit.submit('n', ['poison']);
    const late = commit.submit('n', ['c']);
    const settled = Promise.allSettled([first, good, bad, late]);
    for (let i = 0; i < 5; i++) await w.releaseNext();
    expect(await settled).toEqual([
      { status: 'fulfilled', value: ['n:a'] },
      { status: 'fulfilled', value: ['n:b'] },
      { status: 'rejected', reason: new Error('refused poison') },
      { status: 'fulfilled', value: ['n:c'] },
    ]);
    expect(w.groups.map((g) => g.items)).toEqual([['a'], ['b', 'poison', 'c'], ['b'], ['poison'], ['c']]);
  });

  it('fails the whole group at once on a failure that says nothing of its items (isolate false), without writing each caller again', async () => {
    const groups: string[][] = [];
    let unblock!: () => void;
    const blocked = new Promise<void>((resolve) => (unblock = resolve));
    const commit = new GroupCommit<string, string>(
      async (_key, items) => {
        groups.push(items);
        await blocked;
        if (items.length > 1) throw new Error('did not answer in time');
        return items;
      },
      500,
      (err) => !String((err as Error).message).includes('in time'),
    );
    const settled = Promise.allSettled(['a', 'b', 'c'].map((item) => commit.submit('n', [item])));
    unblock();
    expect(await settled).toEqual([
      { status: 'fulfilled', value: ['a'] },
      { status: 'rejected', reason: new Error('did not answer in time') },
      { status: 'rejected', reason: new Error('did not answer in time') },
    ]);
    expect(groups).toEqual([['a'], ['b', 'c']]);
  });

  it('fails the callers waiting behind a write that got no answer with it, instead of each group waiting out another deadline; a later caller starts the next write', async () => {
    const w = gatedWrite(() => true);
    const commit = new GroupCommit(w.write, 2, () => false);
    const first = commit.submit('n', ['a']);
    // Three groups' worth wait behind the first write (at most two items a write).
    const waiting = ['b', 'c', 'd', 'e', 'f'].map((item) => commit.submit('n', [item]));
    const all = Promise.allSettled([first, ...waiting]);
    await w.releaseNext();
    const outcomes = await all;
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected', 'rejected', 'rejected']);
    // One write only: the store that did not answer was not asked again for the callers behind it.
    expect(w.groups.map((g) => g.items)).toEqual([['a']]);
    const later = commit.submit('n', ['g']);
    await w.releaseNext();
    await expect(later).rejects.toThrow('refused g');
    expect(w.groups.map((g) => g.items)).toEqual([['a'], ['g']]);
  });

  it('refuses every caller of a write that answered the wrong number of results, and goes on with the next group', async () => {
    let calls = 0;
    const commit = new GroupCommit<string, string>(async (_key, items) => (++calls === 1 ? items.slice(1) : items));
    await expect(commit.submit('n', ['a', 'b'])).rejects.toThrow('answered 1 results for 2 items');
    await expect(commit.submit('n', ['c'])).resolves.toEqual(['c']);
  });

  it('answers an empty hand-in without a write', async () => {
    const w = gatedWrite();
    await expect(new GroupCommit(w.write).submit('n', [])).resolves.toEqual([]);
    expect(w.groups).toEqual([]);
  });
});
