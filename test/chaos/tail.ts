/**
 * The last lines a process printed, bounded by lines and by bytes, so a 10-minute run of twelve
 * processes keeps enough of each one's output to explain an incident without growing with the run.
 */
export class OutputTail {
  private chunks: string[] = [];
  private bytes = 0;
  /** The unfinished last line (no newline yet). */
  private partial = '';

  constructor(
    readonly maxLines = 200,
    /** Bytes of UTF-8 kept at most (a single longer line is cut to its end). */
    readonly maxBytes = 64 * 1024,
  ) {}

  /** Appends output; only the newest `maxLines` lines and `maxBytes` bytes stay. */
  push(data: Buffer | string): void {
    const text = this.partial + data.toString();
    const lines = text.split('\n');
    this.partial = lines.pop()!;
    for (const line of lines) this.add(`${line}\n`);
    this.trim();
  }

  /** What is kept, oldest first (the unfinished last line included). */
  text(): string {
    const kept = this.chunks.join('') + this.partial;
    return Buffer.byteLength(kept) <= this.maxBytes ? kept : cutToBytes(kept, this.maxBytes);
  }

  private add(line: string): void {
    if (Buffer.byteLength(line) > this.maxBytes) line = cutToBytes(line, this.maxBytes);
    this.chunks.push(line);
    this.bytes += Buffer.byteLength(line);
  }

  private trim(): void {
    // The partial line counts against both bounds, as it is part of what `text()` answers.
    const partialBytes = Buffer.byteLength(this.partial);
    const lineBudget = this.maxLines - (this.partial ? 1 : 0);
    let drop = 0;
    while (this.chunks.length - drop > 0 && (this.chunks.length - drop > lineBudget || this.bytes + partialBytes > this.maxBytes)) {
      this.bytes -= Buffer.byteLength(this.chunks[drop]!);
      drop++;
    }
    if (drop) this.chunks = this.chunks.slice(drop);
    if (partialBytes > this.maxBytes) this.partial = cutToBytes(this.partial, this.maxBytes);
  }
}

/** The end of `text` that fits in `maxBytes` of UTF-8 (never half a character). */
function cutToBytes(text: string, maxBytes: number): string {
  const buf = Buffer.from(text);
  let from = buf.length - maxBytes;
  // Skip UTF-8 continuation bytes (10xxxxxx) so the cut starts on a character.
  while (from < buf.length && (buf[from]! & 0xc0) === 0x80) from++;
  return buf.subarray(from).toString();
}
