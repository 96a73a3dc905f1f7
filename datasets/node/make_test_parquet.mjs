#!/usr/bin/env node
// make_test_parquet.mjs: small VectorDBBench-layout parquet files for the
// converter's tests, written with hyparquet-writer, plus the answers the
// converter must produce, computed here independently of it.
//
//   node make_test_parquet.mjs DIR --n N --nq Q --dim D --k K --seed S
//        [--no-offset-index] [--row-group ROWS] [--page-bytes B] [--sparse-ids]
//        [--bad unknown-neighbour|short-emb|nan|no-emb|dup-id]
//
// Writes DIR/shuffle_train.parquet (id, emb), DIR/test.parquet (id, emb),
// DIR/neighbors.parquet (id, neighbors_id), and the expected outputs
// DIR/expect_base.fbin, DIR/expect_query.fbin (rows in file order, not
// normalised) and DIR/expect_gt.ibin (ids only, rows in test.parquet order,
// neighbours as base row positions: the exact L2 top k, so the bundle's
// ground-truth check accepts them).  Train ids are a seeded permutation
// (times 7 plus 3 with --sparse-ids); neighbours rows are in reverse query
// order, so the converter must map both kinds of id.  --bad plants one
// defect the converter must refuse (the expected files are then moot).

import fs from 'node:fs'
import path from 'node:path'
import { parquetWriteFile } from 'hyparquet-writer'

const args = process.argv.slice(2)
const dir = args[0]
const opt = (name, dflt) => { const i = args.indexOf(name); return i < 0 ? dflt : Number(args[i + 1]) }
const flag = (name) => args.includes(name)
const n = opt('--n', 1000), nq = opt('--nq', 20), dim = opt('--dim', 8), k = opt('--k', 10), seed = opt('--seed', 1)
const rowGroup = opt('--row-group', 1 << 30), pageBytes = opt('--page-bytes', 1 << 20)
const offsetIndex = !flag('--no-offset-index'), sparse = flag('--sparse-ids')

let state = BigInt(seed) * 0x9e3779b97f4a7c15n & 0xffffffffffffffffn
function rand() { // splitmix64 -> [0, 1)
  state = (state + 0x9e3779b97f4a7c15n) & 0xffffffffffffffffn
  let z = state
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & 0xffffffffffffffffn
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & 0xffffffffffffffffn
  return Number((z ^ (z >> 31n)) >> 11n) / 2 ** 53
}
const perm = (m) => { const p = Array.from({ length: m }, (_, i) => i); for (let i = m - 1; i > 0; i--) { const j = Math.floor(rand() * (i + 1)); [p[i], p[j]] = [p[j], p[i]] } return p }
const vec = () => Array.from({ length: dim }, () => Math.fround(rand() * 2 - 1))

const trainIds = perm(n).map(v => sparse ? v * 7 + 3 : v)
const trainEmb = Array.from({ length: n }, vec)
const testIds = perm(nq).map(v => v + 100)
const testEmb = Array.from({ length: nq }, vec)
const bad = args.includes('--bad') ? args[args.indexOf('--bad') + 1] : null
const l2 = (a, b) => a.reduce((s, v, i) => s + (v - b[i]) ** 2, 0)
const neighbours = testEmb.map(q => trainEmb.map((v, r) => [l2(q, v), r]).sort((a, b) => a[0] - b[0] || a[1] - b[1]).slice(0, k).map(e => e[1]))
const trainLists = trainEmb.map(v => v.slice())
if (bad === 'short-emb') trainLists[5].pop()
if (bad === 'nan') trainLists[7][2] = NaN
if (bad === 'dup-id') trainIds[9] = trainIds[4]

const listSchema = (name, type) => [
  { name: 'root', num_children: 2 },
  { name: 'id', type: 'INT64', repetition_type: 'OPTIONAL' },
  { name, repetition_type: 'OPTIONAL', num_children: 1, converted_type: 'LIST' },
  { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
  { name: 'element', type, repetition_type: 'OPTIONAL' },
]
function write(file, ids, listName, lists, type, name = listName) {
  parquetWriteFile({
    filename: path.join(dir, file),
    columnData: [
      { name: 'id', data: ids.map(BigInt), offsetIndex },
      { name, data: lists, offsetIndex },
    ],
    schema: listSchema(name, type),
    rowGroupSize: rowGroup,
    pageSize: pageBytes,
  })
}
fs.mkdirSync(dir, { recursive: true })
write('shuffle_train.parquet', trainIds, 'emb', trainLists, 'FLOAT', bad === 'no-emb' ? 'vector' : 'emb')
write('test.parquet', testIds, 'emb', testEmb, 'FLOAT')
const order = testIds.map((_, i) => nq - 1 - i)
const lists = order.map(q => neighbours[q].map(r => BigInt(trainIds[r])))
if (bad === 'unknown-neighbour') lists[3][1] = 1000000007n
write('neighbors.parquet', order.map(q => testIds[q]), 'neighbors_id', lists, 'INT64')

function fbin(file, rows, width, Type) {
  const buf = Buffer.alloc(8 + rows.length * width * 4)
  buf.writeUInt32LE(rows.length, 0); buf.writeUInt32LE(width, 4)
  const a = new Type(buf.buffer, buf.byteOffset + 8, rows.length * width)
  rows.forEach((r, i) => r.forEach((v, j) => { a[i * width + j] = v }))
  fs.writeFileSync(path.join(dir, file), buf)
}
fbin('expect_base.fbin', trainEmb, dim, Float32Array)
fbin('expect_query.fbin', testEmb, dim, Float32Array)
fbin('expect_gt.ibin', neighbours, k, Int32Array)
