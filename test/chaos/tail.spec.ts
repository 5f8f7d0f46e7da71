import { OutputTail } from './tail.js';

describe(OutputTail.name, () => {
  describe('push', () => {
    it('keeps every line while under both bounds, across chunks that split lines', () => {
      const sut = new OutputTail(10, 1024);
      sut.push('one\ntw');
      sut.push(Buffer.from('o\nthree'));
      expect(sut.text()).toBe('one\ntwo\nthree');
    });

    it('keeps only the newest maxLines lines', () => {
      const sut = new OutputTail(200, 1 << 20);
      for (let i = 1; i <= 1000; i++) sut.push(`line ${i}\n`);
      const lines = sut.text().split('\n').filter(Boolean);
      expect(lines).toHaveLength(200);
      expect(lines[0]).toBe('line 801');
      expect(lines.at(-1)).toBe('line 1000');
    });

    it('counts an unfinished last line against maxLines', () => {
      const sut = new OutputTail(3, 1024);
      sut.push('a\nb\nc\nd');
      expect(sut.text()).toBe('b\nc\nd');
    });

    it('keeps only the newest maxBytes bytes, dropping whole lines first', () => {
      const sut = new OutputTail(1000, 100);
      for (let i = 0; i < 50; i++) sut.push(`${String(i).padStart(9, '0')}\n`); // 10 bytes a line
      expect(sut.text()).toBe(Array.from({ length: 10 }, (_, i) => `${String(40 + i).padStart(9, '0')}\n`).join(''));
    });

    it('cuts a line longer than maxBytes to its end, never inside a character', () => {
      const sut = new OutputTail(10, 8);
      sut.push(`start ${'é'.repeat(20)}\n`);
      const kept = sut.text();
      expect(Buffer.byteLength(kept)).toBeLessThanOrEqual(8);
      expect(kept).toBe('ééé\n');
    });

    it('bounds output that never ends a line', () => {
      const sut = new OutputTail(10, 64);
      for (let i = 0; i < 100; i++) sut.push('x'.repeat(100));
      expect(sut.text()).toBe('x'.repeat(64));
    });

    it('stays within 64 KB and 200 lines by default for a long run of long lines', () => {
      const sut = new OutputTail();
      for (let i = 0; i < 5000; i++) sut.push(`${i} ${'y'.repeat(500)}\n`);
      const kept = sut.text();
      expect(Buffer.byteLength(kept)).toBeLessThanOrEqual(64 * 1024);
      expect(kept.split('\n').filter(Boolean).length).toBeLessThanOrEqual(200);
      expect(kept.endsWith(`4999 ${'y'.repeat(500)}\n`)).toBe(true);
    });
  });
});
