#!/usr/bin/env node
// parquet2fbin.mjs: VectorDBBench parquet files -> big-ann files of a bundle.
//
//   node parquet2fbin.mjs --out DIR [--metric l2|ip|cosine] [--train FILE]
//        [--test FILE] [--neighbors FILE] [--gt-k K] [--window ROWS]
//
//   --train      shuffle_train.parquet or train.parquet (`id` int, `emb` list<float>)
//                -> DIR/base.fbin, and DIR/base_ids.i64bin, the id -> row map:
//                   uint32 n, uint32 1, then n int64 ids (row r holds id ids[r])
//   --test       test.parquet (`id`, `emb`) -> DIR/query.fbin, DIR/query_ids.i64bin
//   --neighbors  neighbors.parquet (`id` of a test row, `neighbors_id` list of
//                train ids) -> DIR/gt.ibin (ids only: uint32 nq, uint32 k, nq*k
//                int32 base row positions), rows in query.fbin order; needs
//                --train and --test.  Alone, the file is only checked (shape,
//                ids parse as non-negative integers) and summarised.
//   --metric cosine normalises base and query rows to unit length.
//   --own-offset-index  build the page index from the page headers even where
//                the file has one, and check it against the file's (a test of
//                the fallback path on real files).
//
// Prints one JSON summary line on stdout.  Exit 0 on success, 1 on bad input
// (the message names the file, row and field), 2 on usage errors.
//
// Memory is bounded by the read window, not by the file: each row group is
// read in windows of --window rows through hyparquet's row ranges, which
// fetch only the pages a window needs when the column chunk has an offset
// index (Polars and hyparquet-writer write one).  The default, 1024 rows,
// keeps the process near 300 MB for 768-d rows (measured: 60,000 x 768 in
// one row group, peak RSS 0.30 GB at 1,000 rows, 0.90 GB at 8,192, 1.8 GB
// for the whole group): decoded rows cost far more in JS than their floats.
// A chunk without an offset index would be fetched whole for every window,
// so for those this converter builds the offset index itself: it walks the chunk's page
// headers (a few bytes each, read one at a time), counts each data page's
// rows (DataPageV2 says so in its header; for a V1 page of a list column the
// repetition levels are decoded and the record starts counted), and hands
// hyparquet the synthetic index as extra bytes past the end of the file.
// Outputs are written to "<name>.tmp.<pid>" and renamed when complete.

import fs from 'node:fs'
import path from 'node:path'
import { parquetMetadataAsync, parquetRead, parquetSchema, readOffsetIndex, snappyUncompress } from 'hyparquet'
import { compressors } from 'hyparquet-compressors'

const DEFAULT_WINDOW_ROWS = 1024

class InputError extends Error {}
class UsageError extends Error {}
const fail = (msg) => { throw new InputError(msg) }

// ---- command line -------------------------------------------------------

function parseArgs(argv) {
  const opts = { window: DEFAULT_WINDOW_ROWS, metric: 'l2', own_offset_index: false }
  const valued = new Set(['--out', '--metric', '--train', '--test', '--neighbors', '--gt-k', '--window'])
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a === '--help' || a === '-h') { opts.help = true; continue }
    if (a === '--own-offset-index') { opts.own_offset_index = true; continue }
    if (!valued.has(a)) throw new UsageError(`unknown argument ${a}`)
    if (i + 1 >= argv.length) throw new UsageError(`${a}: missing value`)
    opts[a.slice(2).replaceAll('-', '_')] = argv[++i]
  }
  if (opts.help) return opts
  if (!['l2', 'ip', 'cosine'].includes(opts.metric)) throw new UsageError(`--metric: '${opts.metric}' is not l2, ip or cosine`)
  for (const k of ['window', 'gt_k']) {
    if (opts[k] === undefined) continue
    const v = Number(opts[k])
    if (!Number.isInteger(v) || v < 1) throw new UsageError(`--${k.replace('_', '-')}: '${opts[k]}' is not a positive integer`)
    opts[k] = v
  }
  if (!opts.train && !opts.test && !opts.neighbors) throw new UsageError('nothing to convert: give --train, --test and/or --neighbors')
  if ((opts.train || opts.test) && !opts.out) throw new UsageError('--out is required')
  if (opts.neighbors && (opts.train || opts.test) && !(opts.train && opts.test)) {
    throw new UsageError('--neighbors needs both --train and --test to map ids to rows')
  }
  return opts
}

// ---- bounded reading ----------------------------------------------------

// A parquet file as hyparquet's AsyncBuffer, read with positioned reads, plus
// optional synthetic bytes past its end (the offset indexes built below).
class FileBuffer {
  constructor(p) {
    this.path = p
    this.fd = fs.openSync(p, 'r')
    this.fileLength = fs.fstatSync(this.fd).size
    this.extra = Buffer.alloc(0)
    this.byteLength = this.fileLength
  }
  appendVirtual(bytes) {
    const at = this.byteLength
    this.extra = Buffer.concat([this.extra, bytes])
    this.byteLength = this.fileLength + this.extra.length
    return at
  }
  read(start, end) {
    const buf = Buffer.alloc(end - start)
    let got = 0
    while (got < buf.length && start + got < this.fileLength) {
      const n = fs.readSync(this.fd, buf, got, Math.min(buf.length - got, this.fileLength - start - got), start + got)
      if (n === 0) break
      got += n
    }
    if (end > this.fileLength) {
      const from = Math.max(start, this.fileLength) - this.fileLength
      this.extra.copy(buf, Math.max(start, this.fileLength) - start, from, end - this.fileLength)
    } else if (got < buf.length) {
      fail(`${this.path}: short read at byte ${start + got} (file truncated?)`)
    }
    return buf
  }
  slice(start, end = this.byteLength) {
    const buf = this.read(start, end)
    return buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length)
  }
  close() { fs.closeSync(this.fd) }
}

// Minimal Thrift compact protocol: read a struct into {fieldId: value}
// (nested structs as objects, lists as arrays), write an OffsetIndex.
class ThriftReader {
  constructor(buf, pos = 0) { this.buf = buf; this.pos = pos }
  byte() {
    if (this.pos >= this.buf.length) throw new RangeError('thrift: past end')
    return this.buf[this.pos++]
  }
  varint() {
    let result = 0n, shift = 0n
    for (;;) {
      const b = this.byte()
      result |= BigInt(b & 0x7f) << shift
      if (!(b & 0x80)) return result
      shift += 7n
      if (shift > 70n) throw new RangeError('thrift: varint too long')
    }
  }
  zigzag() { const v = this.varint(); return Number((v >> 1n) ^ -(v & 1n)) }
  value(type) {
    switch (type) {
    case 1: return true
    case 2: return false
    case 3: return (this.byte() << 24) >> 24
    case 4: case 5: case 6: return this.zigzag()
    case 7: this.pos += 8; return 0
    case 8: { const n = Number(this.varint()); const s = this.buf.subarray(this.pos, this.pos + n); this.pos += n; return s }
    case 9: case 10: {
      const h = this.byte()
      let n = h >> 4
      const et = h & 0x0f
      if (n === 15) n = Number(this.varint())
      const out = []
      for (let i = 0; i < n; i++) out.push(et === 1 || et === 2 ? this.byte() === 1 : this.value(et))
      return out
    }
    case 11: {
      const n = Number(this.varint())
      if (n === 0) return new Map()
      const kv = this.byte(), m = new Map()
      for (let i = 0; i < n; i++) m.set(this.value(kv >> 4), this.value(kv & 0x0f))
      return m
    }
    case 12: return this.struct()
    default: throw new RangeError(`thrift: unknown type ${type}`)
    }
  }
  struct() {
    const out = {}
    let last = 0
    for (;;) {
      const h = this.byte()
      if (h === 0) return out
      const type = h & 0x0f
      const delta = h >> 4
      const id = delta ? last + delta : this.zigzag()
      last = id
      out[id] = this.value(type)
    }
  }
}

function writeVarint(out, v) {
  v = BigInt(v)
  while (v >= 0x80n) { out.push(Number(v & 0x7fn) | 0x80); v >>= 7n }
  out.push(Number(v))
}
const zz = (v) => { v = BigInt(v); return (v << 1n) ^ (v >> 63n) }

// OffsetIndex { 1: list<PageLocation { 1: i64 offset, 2: i32 size, 3: i64 first_row }> }
function encodeOffsetIndex(locations) {
  const out = []
  out.push(0x19) // field 1, list
  if (locations.length < 15) out.push((locations.length << 4) | 12)
  else { out.push(0xf0 | 12); writeVarint(out, locations.length) }
  for (const loc of locations) {
    out.push(0x16); writeVarint(out, zz(loc.offset)) // field 1 i64
    out.push(0x15); writeVarint(out, zz(loc.compressed_page_size)) // field 2 i32
    out.push(0x16); writeVarint(out, zz(loc.first_row_index)) // field 3 i64
    out.push(0)
  }
  out.push(0)
  return Buffer.from(out)
}

function decompress(codec, bytes, outLength, where) {
  if (codec === 'UNCOMPRESSED') return bytes
  if (codec === 'SNAPPY') {
    const out = new Uint8Array(outLength)
    snappyUncompress(bytes, out)
    return out
  }
  const fn = compressors[codec]
  if (!fn) fail(`${where}: compression codec ${codec} is not supported`)
  return fn(bytes, outLength)
}

// Count the values with repetition level 0 (= records) in an RLE/bit-packed
// hybrid run of `count` levels of `bitWidth` bits.
function countRecordStarts(buf, pos, end, bitWidth, count) {
  let records = 0, seen = 0
  const byteWidth = (bitWidth + 7) >> 3
  while (seen < count && pos < end) {
    let header = 0, shift = 0, b
    do { b = buf[pos++]; header |= (b & 0x7f) << shift; shift += 7 } while (b & 0x80)
    if (header & 1) { // bit-packed groups of 8
      const n = (header >> 1) * 8
      let bitPos = pos * 8
      for (let i = 0; i < n && seen < count; i++, seen++) {
        let v = 0
        for (let k = 0; k < bitWidth; k++, bitPos++) v |= ((buf[bitPos >> 3] >> (bitPos & 7)) & 1) << k
        if (v === 0) records++
      }
      pos += (header >> 1) * bitWidth
    } else {
      const n = header >> 1
      let v = 0
      for (let k = 0; k < byteWidth; k++) v |= buf[pos++] << (8 * k)
      const take = Math.min(n, count - seen)
      if (v === 0) records += take
      seen += take
    }
  }
  return records
}

function maxRepetitionLevel(schemaTree, pathInSchema) {
  let node = schemaTree, level = 0
  for (const name of pathInSchema) {
    node = node.children.find(c => c.element.name === name)
    if (!node) return 0
    if (node.element.repetition_type === 'REPEATED') level++
  }
  return level
}

// Walk a column chunk's pages and return PageLocations for its data pages.
function buildPageLocations(fb, meta, maxRep) {
  const where = `${fb.path}: column ${meta.path_in_schema.join('.')}`
  const start = Number(meta.dictionary_page_offset || meta.data_page_offset)
  const end = start + Number(meta.total_compressed_size)
  const locations = []
  let pos = start, row = 0
  while (pos < end) {
    let header, headerLen
    for (let probe = 256; ; probe *= 4) {
      const bytes = fb.read(pos, Math.min(pos + probe, fb.fileLength))
      try {
        const r = new ThriftReader(bytes)
        header = r.struct()
        headerLen = r.pos
        break
      } catch (e) {
        if (!(e instanceof RangeError) || probe > (1 << 24) || pos + probe >= fb.fileLength) {
          fail(`${where}: unreadable page header at byte ${pos}`)
        }
      }
    }
    const type = header[1], compressed = header[3], uncompressed = header[2]
    if (!(compressed >= 0) || pos + headerLen + compressed > end) fail(`${where}: page at byte ${pos} overruns its column chunk`)
    if (type === 0 || type === 3) { // DATA_PAGE, DATA_PAGE_V2
      let rows
      if (type === 3) {
        rows = header[8][3]
      } else if (maxRep === 0) {
        rows = header[5][1]
      } else {
        const page = decompress(meta.codec, fb.read(pos + headerLen, pos + headerLen + compressed), uncompressed, where)
        const levelLen = page[0] | (page[1] << 8) | (page[2] << 16) | (page[3] << 24)
        const bitWidth = 32 - Math.clz32(maxRep)
        rows = countRecordStarts(page, 4, 4 + levelLen, bitWidth, header[5][1])
      }
      locations.push({ offset: pos, compressed_page_size: headerLen + compressed, first_row_index: row })
      row += rows
    }
    pos += headerLen + compressed
  }
  return { locations, rows: row }
}

// The file's own offset index of a chunk, as PageLocations with numbers.
function fileOffsetIndex(fb, chunk) {
  const start = Number(chunk.offset_index_offset)
  const bytes = fb.slice(start, start + chunk.offset_index_length)
  return readOffsetIndex({ view: new DataView(bytes), offset: 0 }).page_locations.map(l => ({
    offset: Number(l.offset), compressed_page_size: l.compressed_page_size, first_row_index: Number(l.first_row_index),
  }))
}

async function openParquet(p, needed, ownIndex = false) {
  if (!fs.existsSync(p)) fail(`${p}: no such file`)
  const fb = new FileBuffer(p)
  let metadata
  try {
    metadata = await parquetMetadataAsync(fb)
  } catch (e) {
    fail(`${p}: not a readable parquet file (${e.message})`)
  }
  const schemaTree = parquetSchema(metadata)
  const names = schemaTree.children.map(c => c.element.name)
  for (const c of needed) if (!names.includes(c)) fail(`${p}: no column '${c}' (columns: ${names.join(', ')})`)
  let synthetic = 0
  for (const [g, rg] of metadata.row_groups.entries()) {
    for (const chunk of rg.columns) {
      const meta = chunk.meta_data
      const hasIndex = !!(chunk.offset_index_offset && chunk.offset_index_length)
      if (!needed.includes(meta.path_in_schema[0]) || (hasIndex && !ownIndex)) continue
      const column = meta.path_in_schema.join('.')
      let built
      try {
        built = buildPageLocations(fb, meta, maxRepetitionLevel(schemaTree, meta.path_in_schema))
      } catch (e) {
        if (e instanceof InputError) throw e
        fail(`${p}: row group ${g} column ${column}: corrupt page headers (${e.message})`)
      }
      const { locations, rows } = built
      if (rows !== Number(rg.num_rows)) fail(`${p}: row group ${g} column ${column} has ${rows} rows in its pages but ${rg.num_rows} in the footer`)
      if (hasIndex) {
        const theirs = fileOffsetIndex(fb, chunk)
        const same = theirs.length === locations.length && theirs.every((l, i) =>
          l.offset === locations[i].offset && l.compressed_page_size === locations[i].compressed_page_size &&
          l.first_row_index === locations[i].first_row_index)
        if (!same) fail(`${p}: row group ${g} column ${column}: the page index built from page headers (${locations.length} pages) differs from the file's (${theirs.length} pages)`)
      }
      const bytes = encodeOffsetIndex(locations)
      chunk.offset_index_offset = BigInt(fb.appendVirtual(bytes))
      chunk.offset_index_length = bytes.length
      synthetic++
    }
  }
  return { path: p, fb, metadata, rows: Number(metadata.num_rows), syntheticIndexes: synthetic }
}

// Yield {rowStart, rows} windows of at most windowRows rows, never crossing
// a row group, each row an array of the requested columns' values.
async function * readWindows(pq, columns, windowRows) {
  let groupStart = 0
  for (const rg of pq.metadata.row_groups) {
    const groupEnd = groupStart + Number(rg.num_rows)
    for (let s = groupStart; s < groupEnd; s += windowRows) {
      const e = Math.min(s + windowRows, groupEnd)
      let rows
      try {
        await parquetRead({
          file: pq.fb, metadata: pq.metadata, columns, rowStart: s, rowEnd: e,
          useOffsetIndex: true, compressors, onComplete: (r) => { rows = r },
        })
      } catch (err) {
        if (err instanceof InputError) throw err
        fail(`${pq.path}: rows ${s}..${e - 1}: ${err.message}`)
      }
      if (!rows || rows.length !== e - s) fail(`${pq.path}: rows ${s}..${e - 1}: got ${rows ? rows.length : 0} rows`)
      yield { rowStart: s, rows }
    }
    groupStart = groupEnd
  }
}

// ---- writers --------------------------------------------------------------

// A file written under a temporary name and renamed by finish().
class AtomicFile {
  constructor(finalPath) {
    this.path = finalPath
    this.tmp = `${finalPath}.tmp.${process.pid}`
    this.fd = fs.openSync(this.tmp, 'w')
    this.pos = 0
  }
  write(buf) {
    let off = 0
    while (off < buf.length) off += fs.writeSync(this.fd, buf, off, buf.length - off, this.pos + off)
    this.pos += buf.length
  }
  pwrite(buf, at) { fs.writeSync(this.fd, buf, 0, buf.length, at) }
  close() {
    fs.fsyncSync(this.fd)
    fs.closeSync(this.fd)
    this.fd = -1
  }
  commit() { fs.renameSync(this.tmp, this.path) }
  abort() {
    if (this.fd >= 0) fs.closeSync(this.fd)
    this.fd = -1
    fs.rmSync(this.tmp, { force: true })
  }
}

// Outputs are renamed into place only when every input has converted, so a
// failure in a later file leaves none of the earlier ones behind.
const pending = new Set()
function atomic(p) { const f = new AtomicFile(p); pending.add(f); return f }
function done(f) { f.close() }
function commitAll() { for (const f of pending) f.commit(); pending.clear() }

// A column of integer ids (INT32/INT64, bigint or number) as a JS number.
function toId(v, where) {
  if (typeof v === 'bigint') {
    if (v < 0n || v > BigInt(Number.MAX_SAFE_INTEGER)) fail(`${where}: id ${v} out of range`)
    return Number(v)
  }
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) fail(`${where}: id ${v} is not a non-negative integer`)
  return v
}

// Convert `emb` rows of one file to DIR/<stem>.fbin and DIR/<stem>_ids.i64bin.
async function convertVectors(file, outDir, stem, metric, windowRows, ownIndex) {
  const pq = await openParquet(file, ['id', 'emb'], ownIndex)
  const vec = atomic(path.join(outDir, `${stem}.fbin`))
  const idf = atomic(path.join(outDir, `${stem}_ids.i64bin`))
  vec.write(Buffer.alloc(8))
  idf.write(Buffer.alloc(8))
  const ids = new Float64Array(pq.rows)
  let dim = 0, n = 0
  for await (const { rowStart, rows } of readWindows(pq, ['id', 'emb'], windowRows)) {
    if (dim === 0 && rows.length) {
      dim = rows[0][1]?.length ?? 0
      if (dim === 0) fail(`${file}: row ${rowStart}: emb is empty or null`)
    }
    const out = new Float32Array(rows.length * dim)
    const idOut = new BigInt64Array(rows.length)
    for (let i = 0; i < rows.length; i++) {
      const r = rowStart + i
      const [id, emb] = rows[i]
      if (id === null || id === undefined) fail(`${file}: row ${r}: id is null`)
      ids[r] = toId(id, `${file}: row ${r}`)
      idOut[i] = BigInt(ids[r])
      if (!emb || emb.length !== dim) fail(`${file}: row ${r}: emb has ${emb ? emb.length : 0} values, expected ${dim}`)
      let norm = 0
      for (let d = 0; d < dim; d++) {
        const v = emb[d]
        if (typeof v !== 'number' || !Number.isFinite(v)) fail(`${file}: row ${r}: emb[${d}] is ${v}, not a finite number`)
        out[i * dim + d] = v
        norm += v * v
      }
      if (metric === 'cosine') {
        if (!(norm > 0)) fail(`${file}: row ${r}: emb is the zero vector (cosine undefined)`)
        const inv = 1 / Math.sqrt(norm)
        for (let d = 0; d < dim; d++) out[i * dim + d] = out[i * dim + d] * inv
      }
    }
    vec.write(Buffer.from(out.buffer, out.byteOffset, out.byteLength))
    idf.write(Buffer.from(idOut.buffer, idOut.byteOffset, idOut.byteLength))
    n += rows.length
  }
  if (n !== pq.rows) fail(`${file}: read ${n} rows but the footer says ${pq.rows}`)
  if (n === 0) fail(`${file}: no rows`)
  if (n > 0x7fffffff) fail(`${file}: ${n} rows exceed the int32 ids of gt.ibin`)
  const h = Buffer.alloc(8)
  h.writeUInt32LE(n, 0); h.writeUInt32LE(dim, 4)
  vec.pwrite(h, 0)
  h.writeUInt32LE(1, 4)
  idf.pwrite(h, 0)
  done(vec)
  done(idf)
  pq.fb.close()
  return { file, rows: n, dim, row_groups: pq.metadata.row_groups.length, synthetic_offset_indexes: pq.syntheticIndexes, ids }
}

// id -> row position; dense table when ids are small, a Map otherwise.
function idIndex(ids, file) {
  let max = -1
  for (const v of ids) if (v > max) max = v
  const dense = max < 4 * ids.length + 1024
  const table = dense ? new Int32Array(max + 1).fill(-1) : new Map()
  for (let r = 0; r < ids.length; r++) {
    const id = ids[r]
    const prev = dense ? table[id] : table.get(id)
    if (prev !== undefined && prev >= 0) fail(`${file}: id ${id} appears in rows ${prev} and ${r}`)
    if (dense) table[id] = r; else table.set(id, r)
  }
  return (id) => { const r = dense ? (id < table.length ? table[id] : -1) : table.get(id); return r === undefined ? -1 : r }
}

async function convertNeighbors(file, outDir, base, query, gtK, windowRows, ownIndex) {
  const pq = await openParquet(file, ['id', 'neighbors_id'], ownIndex)
  const baseRow = base ? base.row : null
  const queryRow = query ? query.row : null
  const nq = query ? query.rows : pq.rows
  let k = gtK ?? 0, gt = null, minId = Infinity, maxId = -Infinity
  let fingerprint = 0xcbf29ce484222325n // FNV-1a over the ids in file order
  const seen = query ? new Uint8Array(nq) : null
  for await (const { rowStart, rows } of readWindows(pq, ['id', 'neighbors_id'], windowRows)) {
    for (let i = 0; i < rows.length; i++) {
      const r = rowStart + i
      const [qidRaw, list] = rows[i]
      const where = `${file}: row ${r}`
      if (qidRaw === null || qidRaw === undefined) fail(`${where}: id is null`)
      const qid = toId(qidRaw, where)
      if (!Array.isArray(list) && !ArrayBuffer.isView(list)) fail(`${where}: neighbors_id is not a list`)
      if (k === 0) k = list.length
      if (k === 0) fail(`${where}: neighbors_id is empty`)
      if (list.length < k || (gtK === undefined && list.length !== k)) {
        fail(`${where}: neighbors_id has ${list.length} ids, expected ${k}`)
      }
      if (!gt) gt = new Int32Array(nq * k)
      let q = r
      if (queryRow) {
        q = queryRow(qid)
        if (q < 0) fail(`${where}: query id ${qid} is not in ${query.file}`)
        if (seen[q]) fail(`${where}: query id ${qid} has a second neighbours row`)
        seen[q] = 1
      }
      for (let j = 0; j < k; j++) {
        const id = toId(list[j], `${where}: neighbors_id[${j}]`)
        fingerprint = ((fingerprint ^ BigInt(id)) * 0x100000001b3n) & 0xffffffffffffffffn
        if (id < minId) minId = id
        if (id > maxId) maxId = id
        if (baseRow) {
          const b = baseRow(id)
          if (b < 0) fail(`${where}: neighbors_id[${j}] = ${id} is not an id of ${base.file}`)
          gt[q * k + j] = b
        } else {
          gt[q * k + j] = id <= 0x7fffffff ? id : -1
        }
      }
    }
  }
  if (pq.rows === 0) fail(`${file}: no rows`)
  if (seen) {
    const missing = seen.indexOf(0)
    if (missing >= 0) fail(`${file}: no neighbours row for query id ${query.ids[missing]} (query row ${missing})`)
  }
  const summary = { file, rows: pq.rows, k, min_id: minId, max_id: maxId, id_fingerprint: fingerprint.toString(16), row_groups: pq.metadata.row_groups.length, synthetic_offset_indexes: pq.syntheticIndexes }
  if (baseRow) {
    const f = atomic(path.join(outDir, 'gt.ibin'))
    const h = Buffer.alloc(8)
    h.writeUInt32LE(nq, 0); h.writeUInt32LE(k, 4)
    f.write(h)
    f.write(Buffer.from(gt.buffer, gt.byteOffset, gt.byteLength))
    done(f)
  }
  pq.fb.close()
  return summary
}

async function main() {
  let opts
  try {
    opts = parseArgs(process.argv.slice(2))
  } catch (e) {
    process.stderr.write(`parquet2fbin: ${e.message}\n`)
    return 2
  }
  if (opts.help) {
    process.stdout.write('usage: parquet2fbin.mjs --out DIR [--metric l2|ip|cosine] [--train FILE] [--test FILE] [--neighbors FILE] [--gt-k K] [--window ROWS] [--own-offset-index]\n')
    return 0
  }
  try {
    if (opts.out) fs.mkdirSync(opts.out, { recursive: true })
    const summary = { metric: opts.metric, normalized: opts.metric === 'cosine', window_rows: opts.window }
    let base = null, query = null
    if (opts.train) base = await convertVectors(opts.train, opts.out, 'base', opts.metric, opts.window, opts.own_offset_index)
    if (opts.test) query = await convertVectors(opts.test, opts.out, 'query', opts.metric, opts.window, opts.own_offset_index)
    if (base && query && base.dim !== query.dim) fail(`${opts.test}: emb has ${query.dim} values but ${opts.train} has ${base.dim}`)
    if (base) base.row = idIndex(base.ids, base.file)
    if (query) query.row = idIndex(query.ids, query.file)
    if (opts.neighbors) summary.neighbors = await convertNeighbors(opts.neighbors, opts.out, base, query, opts.gt_k, opts.window, opts.own_offset_index)
    commitAll()
    for (const [key, v] of [['base', base], ['query', query]]) {
      if (v) { delete v.ids; delete v.row; summary[key] = v }
    }
    summary.peak_rss_bytes = process.resourceUsage().maxRSS * 1024
    process.stdout.write(JSON.stringify(summary) + '\n')
    return 0
  } catch (e) {
    for (const f of pending) f.abort()
    if (e instanceof InputError) {
      process.stderr.write(`parquet2fbin: ${e.message}\n`)
      return 1
    }
    process.stderr.write(`parquet2fbin: ${e.stack || e}\n`)
    return 1
  }
}

process.exitCode = await main()
