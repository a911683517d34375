// RUN: flash-opt %s -split-input-file -flash-tile | FileCheck %s

// Block sparsity from a chunked mask (q / C == kv / C: chunked local
// attention): each query tile's key loop runs from its first row's chunk
// start (rounded down to block_n) to its last row's chunk end, within the
// causal bound; each key tile's query loop (backward) over the chunks of
// its first and last keys. A chunk of 100 is no multiple of the 64 x 32
// tiles, so tiles straddle chunks.

// CHECK-LABEL: func.func @chunk_forward
// CHECK: %[[ROW:.*]] = arith.muli %{{.*}}, %c64
// CHECK: %[[CAUSALEND:.*]] = arith.minsi
// CHECK: %[[C:.*]] = arith.constant 100 : index
// CHECK: %[[CHUNK:.*]] = arith.divui %[[ROW]], %[[C]] : index
// CHECK: %[[START:.*]] = arith.muli %[[CHUNK]], %[[C]] : index
// CHECK: %[[TILES:.*]] = arith.divui %[[START]], %c32
// CHECK: %[[ALIGNED:.*]] = arith.muli %[[TILES]], %c32
// CHECK: %[[LAST:.*]] = arith.addi %[[ROW]], %c63 : index
// CHECK: %[[LASTCHUNK:.*]] = arith.divui %[[LAST]], %[[C]] : index
// CHECK: %[[NEXT:.*]] = arith.addi %[[LASTCHUNK]], %c1
// CHECK: %[[CHUNKEND:.*]] = arith.muli %[[NEXT]], %[[C]] : index
// CHECK: %[[BEGIN:.*]] = arith.maxsi %{{.*}}, %[[ALIGNED]] : index
// CHECK: %[[END:.*]] = arith.minsi %[[CAUSALEND]], %[[CHUNKEND]] : index
// CHECK: scf.for %{{.*}} = %[[BEGIN]] to %[[END]] step %c32
!t = memref<?x?x?x64xbf16>
func.func @chunk_forward(%q: !t, %k: !t, %v: !t, %o: !t) {
  flash.attention %q, %k, %v -> %o
      {causal, config = #flash.config<block_m = 64, block_n = 32>}
      : !t, !t, !t -> !t
    mask_mod {
    ^bb0(%b: index, %h: index, %qi: index, %kv: index):
      %c = arith.constant 100 : index
      %qc = arith.divui %qi, %c : index
      %kc = arith.divui %kv, %c : index
      %same = arith.cmpi eq, %qc, %kc : index
      flash.yield %same : i1
    }
  return
}

// -----

// In i64 with divsi, and-ed with a condition of its own: the chunk still
// bounds the keys.
// CHECK-LABEL: func.func @chunk_signed_and
// CHECK: %[[C:.*]] = arith.constant 256 : index
// CHECK: arith.divui %{{.*}}, %[[C]] : index
// CHECK: scf.for
!t = memref<?x?x?x64xbf16>
func.func @chunk_signed_and(%q: !t, %k: !t, %v: !t, %o: !t) {
  flash.attention %q, %k, %v -> %o
      {config = #flash.config<block_m = 64, block_n = 32>}
      : !t, !t, !t -> !t
    mask_mod {
    ^bb0(%b: index, %h: index, %qi: index, %kv: index):
      %q64 = arith.index_cast %qi : index to i64
      %k64 = arith.index_cast %kv : index to i64
      %c = arith.constant 256 : i64
      %qc = arith.divsi %q64, %c : i64
      %kc = arith.divsi %k64, %c : i64
      %same = arith.cmpi eq, %kc, %qc : i64
      %two = arith.constant 2 : index
      %odd = arith.remui %h, %two : index
      %zero = arith.constant 0 : index
      %even = arith.cmpi eq, %odd, %zero : index
      %both = arith.andi %even, %same : i1
      flash.yield %both : i1
    }
  return
}

// -----

// Chunks of different sizes, or a divisor that is no constant, bound
// nothing: the key loop starts at 0 and ends at seq_k.
// CHECK-LABEL: func.func @chunk_unreadable
// CHECK-NOT: arith.divui %{{.*}}, %c16
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %dim
!t = memref<?x?x?x64xbf16>
func.func @chunk_unreadable(%q: !t, %k: !t, %v: !t, %o: !t) {
  flash.attention %q, %k, %v -> %o
      {config = #flash.config<block_m = 64, block_n = 32>}
      : !t, !t, !t -> !t
    mask_mod {
    ^bb0(%b: index, %h: index, %qi: index, %kv: index):
      %c16 = arith.constant 16 : index
      %c32 = arith.constant 32 : index
      %qc = arith.divui %qi, %c16 : index
      %kc = arith.divui %kv, %c32 : index
      %same = arith.cmpi eq, %qc, %kc : index
      %hc = arith.divui %kv, %h : index
      %qh = arith.divui %qi, %h : index
      %same_h = arith.cmpi eq, %qh, %hc : index
      %either = arith.ori %same, %same_h : i1
      flash.yield %either : i1
    }
  return
}

// -----

// Backward: key tile `col` runs the query tiles from its chunk's start
// (rounded down to block_m) to the end of its last key's chunk.
// CHECK-LABEL: func.func @chunk_backward
// CHECK: %[[COL:.*]] = arith.muli %{{.*}}, %c32
// CHECK: %[[C:.*]] = arith.constant 100 : index
// CHECK: %[[CHUNK:.*]] = arith.divui %[[COL]], %[[C]] : index
// CHECK: %[[START:.*]] = arith.muli %[[CHUNK]], %[[C]] : index
// CHECK: %[[TILES:.*]] = arith.divui %[[START]], %c64
// CHECK: %[[ALIGNED:.*]] = arith.muli %[[TILES]], %c64
// CHECK: %[[LAST:.*]] = arith.addi %[[COL]], %c31
// CHECK: %[[LASTCHUNK:.*]] = arith.divui %[[LAST]], %[[C]] : index
// CHECK: %[[NEXT:.*]] = arith.addi %[[LASTCHUNK]], %c1
// CHECK: %[[CHUNKEND:.*]] = arith.muli %[[NEXT]], %[[C]] : index
// CHECK: %[[FIRST:.*]] = arith.maxsi %{{.*}}, %[[ALIGNED]] : index
// CHECK: %[[END:.*]] = arith.minsi %{{.*}}, %[[CHUNKEND]] : index
// CHECK: scf.for %{{.*}} = %[[FIRST]] to %[[END]] step %c64
!t = memref<?x?x?x64xbf16>
!l = memref<?x?x?xf32>
func.func @chunk_backward(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !l,
                          %dq: !t, %dk: !t, %dv: !t) {
  flash.attention_backward %q, %k, %v, %o, %do, %lse -> %dq, %dk, %dv
      {causal, config = #flash.config<block_m = 64, block_n = 32>}
      : !t, !t, !t, !t, !t, !l -> !t, !t, !t
    mask_mod {
    ^bb0(%b: index, %h: index, %qi: index, %kv: index):
      %c = arith.constant 100 : index
      %qc = arith.divui %qi, %c : index
      %kc = arith.divui %kv, %c : index
      %same = arith.cmpi eq, %qc, %kc : index
      flash.yield %same : i1
    }
  return
}
