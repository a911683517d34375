// RUN: flash-opt %s -split-input-file -flash-tile | FileCheck %s

// Block sparsity from the mask: a mask_mod that hides every key more than W
// behind its query starts each query tile's key loop at the tile holding
// key row - W (rounded down to block_n); one the analysis cannot read
// starts at 0 and masks every tile.

// kv + 100 >= q (unsigned, as the shipped sliding window writes it).
// CHECK-LABEL: func.func @window_uge
// CHECK: %[[ROW:.*]] = arith.muli %{{.*}}, %c64
// CHECK: %[[BACK:.*]] = arith.subi %[[ROW]], %c100
// CHECK: %[[FIRST:.*]] = arith.maxsi %[[BACK]], %c0
// CHECK: %[[TILES:.*]] = arith.divui %[[FIRST]], %c32
// CHECK: %[[BEGIN:.*]] = arith.muli %[[TILES]], %c32
// CHECK: scf.for %{{.*}} = %[[BEGIN]] to
!t = memref<?x?x?x64xbf16>
func.func @window_uge(%q: !t, %k: !t, %v: !t, %o: !t) {
  flash.attention %q, %k, %v -> %o
      {causal, config = #flash.config<block_m = 64, block_n = 32>}
      : !t, !t, !t -> !t
    mask_mod {
    ^bb0(%b: index, %h: index, %qi: index, %kv: index):
      %w = arith.constant 100 : index
      %reach = arith.addi %kv, %w : index
      %in = arith.cmpi uge, %reach, %qi : index
      flash.yield %in : i1
    }
  return
}

// -----

// q - kv <= 50 in i64 (signed), and-ed with a mask of its own: the window
// still bounds the keys.
// CHECK-LABEL: func.func @window_signed_difference
// CHECK: arith.subi %{{.*}}, %c50
// CHECK: scf.for
!t = memref<?x?x?x64xbf16>
func.func @window_signed_difference(%q: !t, %k: !t, %v: !t, %o: !t) {
  flash.attention %q, %k, %v -> %o
      {config = #flash.config<block_m = 64, block_n = 32>}
      : !t, !t, !t -> !t
    mask_mod {
    ^bb0(%b: index, %h: index, %qi: index, %kv: index):
      %q64 = arith.index_cast %qi : index to i64
      %k64 = arith.index_cast %kv : index to i64
      %d = arith.subi %q64, %k64 : i64
      %w = arith.constant 50 : i64
      %near = arith.cmpi sle, %d, %w : i64
      %two = arith.constant 2 : index
      %odd = arith.remui %h, %two : index
      %zero = arith.constant 0 : index
      %even = arith.cmpi eq, %odd, %zero : index
      %both = arith.andi %near, %even : i1
      flash.yield %both : i1
    }
  return
}

// -----

// q - kv < 8 unsigned: false where kv > q (the difference wraps), else the
// window: kv >= q - 7.
// CHECK-LABEL: func.func @window_unsigned_difference
// CHECK: arith.subi %{{.*}}, %c7
// CHECK: scf.for
!t = memref<?x?x?x64xbf16>
func.func @window_unsigned_difference(%q: !t, %k: !t, %v: !t, %o: !t) {
  flash.attention %q, %k, %v -> %o
      {config = #flash.config<block_m = 64, block_n = 32>}
      : !t, !t, !t -> !t
    mask_mod {
    ^bb0(%b: index, %h: index, %qi: index, %kv: index):
      %d = arith.subi %qi, %kv : index
      %w = arith.constant 8 : index
      %near = arith.cmpi ult, %d, %w : index
      flash.yield %near : i1
    }
  return
}

// -----

// Not provable: kv - q <= 5 (a window ahead of the query, not behind),
// an or with an unbounded side (prefix-LM), q + 3 >= kv unsigned. The loops
// start at 0.
// CHECK-LABEL: func.func @no_window
// CHECK-NOT: arith.maxsi
// CHECK: scf.for %{{.*}} = %c0{{(_[0-9]+)?}} to
!t = memref<?x?x?x64xbf16>
func.func @no_window(%q: !t, %k: !t, %v: !t, %o: !t) {
  flash.attention %q, %k, %v -> %o
      {config = #flash.config<block_m = 64, block_n = 32>}
      : !t, !t, !t -> !t
    mask_mod {
    ^bb0(%b: index, %h: index, %qi: index, %kv: index):
      %k64 = arith.index_cast %kv : index to i64
      %q64 = arith.index_cast %qi : index to i64
      %d = arith.subi %k64, %q64 : i64
      %five = arith.constant 5 : i64
      %ahead = arith.cmpi sle, %d, %five : i64
      %p = arith.constant 16 : index
      %prefix = arith.cmpi ult, %kv, %p : index
      %either = arith.ori %ahead, %prefix : i1
      %three = arith.constant 3 : index
      %q3 = arith.addi %qi, %three : index
      %below = arith.cmpi uge, %q3, %kv : index
      %all = arith.andi %either, %below : i1
      flash.yield %all : i1
    }
  return
}
