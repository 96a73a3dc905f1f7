#!/usr/bin/env node
// hubness.mjs: how concentrated the true neighbours of a query set are.
//
//   node hubness.mjs --n N [--k K] FILE...
//
//   FILE  a bundle's gt.ibin (uint32 nq, uint32 depth, nq*depth int32 ids,
//         optionally followed by nq*depth float32 distances) or
//         a VectorDBBench neighbours parquet (`id`, `neighbors_id` list<int>)
//   --n   how many rows the neighbours were drawn from: the base size, or
//         the size of the filtered subset (VectorDBBench's label_1p of a 1M
//         set: 10000).  Rows no query finds count as zeros.
//   --k   neighbours per query to count (default 10; at most the file's depth)
//
// For each file, one line of JSON: the number of distinct rows among the
// queries' top-k lists and the number a uniform draw of as many ids would
// give, the largest k-occurrence (how many queries have one row among their
// k nearest), the share of all slots taken by the 1% most frequent rows,
// the skewness of the k-occurrence over all n rows, and how many pairs of
// queries share at least one of their k nearest.  Real embeddings whose
// queries keep finding the same central rows score far above a stand-in
// whose rows are all alike (datasets/README.md, "Hubs").
//
// Exit 0, 1 on a file that cannot be read (the message names it), 2 on usage.

import fs from 'node:fs'
import { parquetRead } from 'hyparquet'
import { compressors } from 'hyparquet-compressors'

function usage(msg) {
  if (msg) process.stderr.write(`hubness: ${msg}\n`)
  process.stderr.write('usage: node hubness.mjs --n N [--k K] FILE...\n')
  process.exit(2)
}

function fail(msg) {
  process.stderr.write(`hubness: ${msg}\n`)
  process.exit(1)
}

const args = process.argv.slice(2)
let n = 0
let k = 10
const files = []
for (let i = 0; i < args.length; i++) {
  const a = args[i]
  if (a === '--n' || a === '--k') {
    const v = Number(args[++i])
    if (!Number.isInteger(v) || v < 1) usage(`${a}: '${args[i] ?? ''}' is not a positive integer`)
    if (a === '--n') n = v
    else k = v
  } else if (a.startsWith('--')) usage(`unknown option ${a}`)
  else files.push(a)
}
if (!n) usage('--n N is required')
if (!files.length) usage('no FILE given')

async function loadLists(path) {
  let buf
  try {
    buf = fs.readFileSync(path)
  } catch (e) {
    fail(`${path}: ${e.code === 'ENOENT' ? 'no such file' : e.message}`)
  }
  if (path.endsWith('.parquet')) {
    const file = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength)
    let rows
    try {
      await parquetRead({ file, compressors, columns: ['neighbors_id'], onComplete: (r) => { rows = r } })
    } catch (e) {
      fail(`${path}: ${e.message}`)
    }
    return rows.map((r, i) => {
      const l = Array.from(r[0] ?? [], Number)
      if (l.length < k) fail(`${path}: row ${i}: ${l.length} neighbours, fewer than --k ${k}`)
      return l.slice(0, k)
    })
  }
  if (buf.length < 8) fail(`${path}: ${buf.length} bytes, too short for a gt.ibin header`)
  const nq = buf.readUInt32LE(0)
  const depth = buf.readUInt32LE(4)
  const ids = 8 + 4 * nq * depth
  if (buf.length !== ids && buf.length !== ids + 4 * nq * depth) {
    fail(`${path}: ${buf.length} bytes, expected ${ids} (ids) or ${ids + 4 * nq * depth} ` +
         `(ids and distances) for ${nq} x ${depth}`)
  }
  if (depth < k) fail(`${path}: depth ${depth}, fewer than --k ${k}`)
  const lists = []
  for (let q = 0; q < nq; q++) {
    const l = []
    for (let j = 0; j < k; j++) l.push(buf.readInt32LE(8 + 4 * (q * depth + j)))
    lists.push(l)
  }
  return lists
}

function summarise(path, lists) {
  const count = new Map()
  let slots = 0
  for (const l of lists) {
    for (const id of l) {
      count.set(id, (count.get(id) ?? 0) + 1)
      slots++
    }
  }
  if (count.size > n) fail(`${path}: ${count.size} distinct ids, more than --n ${n}`)
  const counts = [...count.values()].sort((a, b) => b - a)
  const mean = slots / n
  const zeros = n - count.size
  let m2 = zeros * mean * mean
  let m3 = zeros * -mean * mean * mean
  for (const c of counts) {
    m2 += (c - mean) ** 2
    m3 += (c - mean) ** 3
  }
  m2 /= n
  m3 /= n
  const top = Math.max(1, Math.floor(n / 100))
  let topSlots = 0
  for (let i = 0; i < top && i < counts.length; i++) topSlots += counts[i]
  // pairs of queries sharing a neighbour: through the inverted lists
  const byId = new Map()
  lists.forEach((l, q) => {
    for (const id of new Set(l)) {
      if (!byId.has(id)) byId.set(id, [])
      byId.get(id).push(q)
    }
  })
  const nq = lists.length
  const seen = new Uint8Array(nq * nq)
  let pairs = 0
  for (const qs of byId.values()) {
    for (let a = 0; a < qs.length; a++) {
      for (let b = a + 1; b < qs.length; b++) {
        const key = qs[a] * nq + qs[b]
        if (!seen[key]) {
          seen[key] = 1
          pairs++
        }
      }
    }
  }
  return {
    file: path,
    queries: nq,
    k,
    n,
    distinct: count.size,
    distinct_if_uniform: Math.round(n * (1 - Math.exp(-slots / n))),
    max_occurrence: counts[0] ?? 0,
    top1pct_slot_share: Number((topSlots / slots).toFixed(4)),
    skewness: Number((m2 > 0 ? m3 / m2 ** 1.5 : 0).toFixed(3)),
    query_pairs_sharing: pairs,
    query_pairs: (nq * (nq - 1)) / 2,
  }
}

for (const f of files) {
  const lists = await loadLists(f)
  process.stdout.write(JSON.stringify(summarise(f, lists)) + '\n')
}
