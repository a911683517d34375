// RUN: flash-opt %s -convert-flash-wg-to-nvvm | FileCheck %s

// The block-level schedule ops (FlashTileSchedule.td) lowered to gpu,
// arith and scf, as the kernel's producer and consumers run them.

!bars = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 10>
!smem = memref<?xi8, #gpu.address_space<workgroup>>

// What a tile's body does with its coordinates.
func.func private @tile(i32, index)
func.func private @tile4(i32, index, i32, index)

// flash.wg.block_tile of a tiles grid: x the query block, y the head,
// gridDim.x the query blocks.
// CHECK-LABEL: func.func @tiles_grid
// CHECK: %[[Y:.*]] = gpu.block_id  y
// CHECK: %[[X:.*]] = gpu.block_id  x
// CHECK: %[[X32:.*]] = arith.index_cast %[[X]] : index to i32
// CHECK: %[[GX:.*]] = gpu.grid_dim  x
// CHECK: %[[NUM:.*]] = arith.index_cast %[[GX]] : index to i32
// CHECK: return %[[X32]], %[[Y]], %[[NUM]]
func.func @tiles_grid() -> (i32, index, i32) {
  %x, %head, %num_m = flash.wg.block_tile
  return %x, %head, %num_m : i32, index, i32
}

// Of a sections grid: head z * gridDim.x + x, query block
// gridDim.y - 1 - y, gridDim.y query blocks.
// CHECK-LABEL: func.func @sections_grid
// CHECK: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK: %[[GX:.*]] = arith.index_cast %grid_dim_x : index to i32
// CHECK: %[[LEVELS:.*]] = arith.index_cast %grid_dim_y : index to i32
// CHECK: %[[X:.*]] = arith.index_cast %block_id_x : index to i32
// CHECK: %[[Y:.*]] = arith.index_cast %block_id_y : index to i32
// CHECK: %[[Z:.*]] = arith.index_cast %block_id_z : index to i32
// CHECK: %[[ZH:.*]] = arith.muli %[[Z]], %[[GX]] : i32
// CHECK: %[[HEAD:.*]] = arith.addi %[[ZH]], %[[X]] : i32
// CHECK: %[[HEADI:.*]] = arith.index_cast %[[HEAD]] : i32 to index
// CHECK: %[[LAST:.*]] = arith.subi %[[LEVELS]], %[[ONE]] : i32
// CHECK: %[[QB:.*]] = arith.subi %[[LAST]], %[[Y]] : i32
// CHECK: return %[[QB]], %[[HEADI]], %[[LEVELS]]
func.func @sections_grid() -> (i32, index, i32) {
  %x, %head, %num_m = flash.wg.block_tile sections
  return %x, %head, %num_m : i32, index, i32
}

// flash.wg.tile_bounds without the mask: m0 = x * block_m, every row
// sees ceil(seq_k / block_n) tiles, floor(seq_k / block_n) of them full.
// CHECK-LABEL: func.func @bounds
// CHECK-SAME: (%[[X:.*]]: i32, %{{.*}}: i32, %{{.*}}: i32, %[[SK:.*]]: i32)
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : i32
// CHECK-DAG: %[[C63:.*]] = arith.constant 63 : i32
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : i32
// CHECK: %[[M0:.*]] = arith.muli %[[X]], %[[C128]] : i32
// CHECK: %[[UP:.*]] = arith.addi %[[SK]], %[[C63]] : i32
// CHECK: %[[HI:.*]] = arith.divsi %[[UP]], %[[C64]] : i32
// CHECK: %[[FULL:.*]] = arith.divsi %[[SK]], %[[C64]] : i32
// CHECK: return %[[M0]], %[[FULL]], %[[HI]]
func.func @bounds(%x: i32, %num_m: i32, %seq_q: i32, %seq_k: i32) -> (i32, i32, i32) {
  %m0, %n_full, %n_hi = flash.wg.tile_bounds %x of %num_m, %seq_q, %seq_k block_m = 128 block_n = 64
  return %m0, %n_full, %n_hi : i32, i32, i32
}

// Causal, aligned to the end: m0 = seq_q - (num_m - x) * block_m; the
// rows see up to (m0 + block_m) + seq_k - seq_q keys (clamped, in tiles);
// the first row's last key + 1 bounds the full tiles.
// CHECK-LABEL: func.func @causal_bounds
// CHECK-SAME: (%[[X:.*]]: i32, %[[NUM:.*]]: i32, %[[SQ:.*]]: i32, %[[SK:.*]]: i32)
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : i32
// CHECK-DAG: %[[C63:.*]] = arith.constant 63 : i32
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : i32
// CHECK: %[[FROMEND:.*]] = arith.subi %[[NUM]], %[[X]] : i32
// CHECK: %[[BACK:.*]] = arith.muli %[[FROMEND]], %[[C128]] : i32
// CHECK: %[[M0:.*]] = arith.subi %[[SQ]], %[[BACK]] : i32
// CHECK: %[[DIAG:.*]] = arith.subi %[[SK]], %[[SQ]] : i32
// CHECK: %[[END:.*]] = arith.addi %[[M0]], %[[C128]] : i32
// CHECK: %[[KEYS:.*]] = arith.addi %[[END]], %[[DIAG]] : i32
// CHECK: %[[MIN:.*]] = arith.minsi %[[KEYS]], %[[SK]] : i32
// CHECK: %[[CLAMP:.*]] = arith.maxsi %[[MIN]], %[[C0]] : i32
// CHECK: %[[UP:.*]] = arith.addi %[[CLAMP]], %[[C63]] : i32
// CHECK: %[[HI:.*]] = arith.divsi %[[UP]], %[[C64]] : i32
// CHECK: %[[LASTKEY:.*]] = arith.addi %[[M0]], %[[DIAG]] : i32
// CHECK: %[[FIRSTKEYS:.*]] = arith.addi %[[LASTKEY]], %[[C1]] : i32
// CHECK: %[[FMIN:.*]] = arith.minsi %[[FIRSTKEYS]], %[[SK]] : i32
// CHECK: %[[FCLAMP:.*]] = arith.maxsi %[[FMIN]], %[[C0]] : i32
// CHECK: %[[FULL:.*]] = arith.divsi %[[FCLAMP]], %[[C64]] : i32
// CHECK: return %[[M0]], %[[FULL]], %[[HI]]
func.func @causal_bounds(%x: i32, %num_m: i32, %seq_q: i32, %seq_k: i32) -> (i32, i32, i32) {
  %m0, %n_full, %n_hi = flash.wg.tile_bounds %x of %num_m, %seq_q, %seq_k block_m = 128 block_n = 64 causal align_to_end
  return %m0, %n_full, %n_hi : i32, i32, i32
}

// flash.wg.key_tiles_seen: ceil(clamp(rows_end + seq_k - seq_q, 0,
// seq_k) / block_n); flash.wg.warp_uniform: shfl.sync.idx from lane 0.
// CHECK-LABEL: func.func @seen
// CHECK-SAME: (%[[END:.*]]: i32, %[[SQ:.*]]: i32, %[[SK:.*]]: i32)
// CHECK: %[[DIAG:.*]] = arith.subi %[[SK]], %[[SQ]] : i32
// CHECK: %[[KEYS:.*]] = arith.addi %[[END]], %[[DIAG]] : i32
// CHECK: arith.minsi %[[KEYS]], %[[SK]] : i32
// CHECK: %[[TILES:.*]] = arith.divsi
// CHECK: %[[U:.*]] = nvvm.shfl.sync  idx %c-1_i32, %[[TILES]], %c0_i32, %c31_i32 : i32 -> i32
// CHECK: return %[[U]]
func.func @seen(%rows_end: i32, %seq_q: i32, %seq_k: i32) -> i32 {
  %t = flash.wg.key_tiles_seen %rows_end, %seq_q, %seq_k block_n = 64
  %u = flash.wg.warp_uniform %t : i32
  return %u : i32
}

// flash.wg.tile_loop with sections: items are pairs of query blocks
// (ceil(num_m / 2) per head), round r of block c is item r * grid + c; a
// pair runs the region for its longer block (num_m - 1 - level) and, when
// level < that, for block `level`, with the ring position moved on by the
// yielded key tiles and the Q slot by one.
// CHECK-LABEL: func.func @static_pairs
// CHECK-SAME: (%[[SQ:.*]]: i32, %[[SK:.*]]: i32, %[[B:.*]]: i32, %[[H:.*]]: i32)
// CHECK: %[[NUM:.*]] = arith.ceildivui %[[SQ]], %c128_i32 : i32
// CHECK: %[[HEADS:.*]] = arith.muli %[[B]], %[[H]] : i32
// CHECK: %[[PERHEAD:.*]] = arith.ceildivui %[[NUM]], %c2_i32 : i32
// CHECK: %[[ITEMS:.*]] = arith.muli %[[PERHEAD]], %[[HEADS]] : i32
// CHECK: %[[GRID:.*]] = arith.index_cast %grid_dim_x : index to i32
// CHECK: %[[FIT:.*]] = arith.divui %c32768_i32, %[[SK]] : i32
// CHECK: %[[LAST:.*]] = arith.subi %[[NUM]], %c1_i32 : i32
// CHECK: %[[BLOCK:.*]] = arith.index_cast %block_id_x : index to i32
// CHECK: %[[ROUNDS32:.*]] = arith.ceildivui %[[ITEMS]], %[[GRID]] : i32
// CHECK: %[[ROUNDS:.*]] = arith.index_cast %[[ROUNDS32]] : i32 to index
// CHECK: scf.for %[[R:.*]] = %c0 to %[[ROUNDS]] step %c1 iter_args(%[[BASE:.*]] = %c0, %[[DONE:.*]] = %c0_i32) -> (index, i32) {
// CHECK: %[[R32:.*]] = arith.index_cast %[[R]] : index to i32
// CHECK: %[[RG:.*]] = arith.muli %[[R32]], %[[GRID]] : i32
// CHECK: %[[T:.*]] = arith.addi %[[RG]], %[[BLOCK]] : i32
// CHECK: %[[OWNED:.*]] = arith.cmpi ult, %[[T]], %[[ITEMS]] : i32
// CHECK: scf.if %[[OWNED]] -> (index, i32) {
// CHECK: %[[HERE:.*]] = arith.minui
// CHECK: %[[LEVEL:.*]] = arith.divui %{{.*}}, %[[HERE]] : i32
// CHECK: %[[HEAD:.*]] = arith.addi %{{.*}}, %{{.*}} : i32
// CHECK: %[[LONGER:.*]] = arith.subi %[[LAST]], %[[LEVEL]] : i32
// CHECK: %[[PAIRED:.*]] = arith.cmpi ult, %[[LEVEL]], %[[LONGER]] : i32
// CHECK: %[[COUNT:.*]] = arith.select %[[PAIRED]], %c2, %c1 : index
// CHECK: scf.for %[[MEMBER:.*]] = %c0 to %[[COUNT]] step %c1 iter_args(%[[B2:.*]] = %[[BASE]], %[[D2:.*]] = %[[DONE]]) -> (index, i32) {
// CHECK: %[[SECOND:.*]] = arith.cmpi ne, %[[MEMBER]], %c0 : index
// CHECK: %[[QB:.*]] = arith.select %[[SECOND]], %[[LEVEL]], %[[LONGER]] : i32
// CHECK: %[[HEADI:.*]] = arith.index_cast %[[HEAD]] : i32 to index
// CHECK: call @tile4(%[[QB]], %[[HEADI]], %[[NUM]], %[[B2]])
// CHECK: %[[NEXTBASE:.*]] = arith.addi %[[B2]], %c3 : index
// CHECK: %[[NEXTDONE:.*]] = arith.addi %[[D2]], %c1_i32 : i32
// CHECK: scf.yield %[[NEXTBASE]], %[[NEXTDONE]] : index, i32
// CHECK: } else {
// CHECK: scf.yield %[[BASE]], %[[DONE]] : index, i32
func.func @static_pairs(%seq_q: i32, %seq_k: i32, %batch: i32, %heads: i32) {
  flash.wg.tile_loop %seq_q, %seq_k, %batch, %heads block_m = 128 sections = 32768 {
  ^bb0(%x: i32, %head: index, %num_m: i32, %kv_base: index, %q: !flash.ring_slot<stages = 2>):
    func.call @tile4(%x, %head, %num_m, %kv_base) : (i32, index, i32, index) -> ()
    %c3 = arith.constant 3 : index
    flash.wg.yield %c3 : index
  }
  return
}

// Without sections: one query block an item, item t of head t / num_m,
// query block num_m - 1 - t % num_m.
// CHECK-LABEL: func.func @head_major
// CHECK: %[[NUM:.*]] = arith.ceildivui %{{.*}}, %c64_i32 : i32
// CHECK-NOT: arith.ceildivui %[[NUM]]
// CHECK: %[[LAST:.*]] = arith.subi %[[NUM]], %c1_i32 : i32
// CHECK: scf.for
// CHECK: scf.if
// CHECK: %[[HEAD:.*]] = arith.divui %[[T:.*]], %[[NUM]] : i32
// CHECK: %[[HN:.*]] = arith.muli %[[HEAD]], %[[NUM]] : i32
// CHECK: %[[LEVEL:.*]] = arith.subi %[[T]], %[[HN]] : i32
// CHECK: %[[LONGER:.*]] = arith.subi %[[LAST]], %[[LEVEL]] : i32
// CHECK-NOT: arith.cmpi ult
// CHECK: scf.for %{{.*}} = %c0 to %c1 step %c1
// CHECK: %[[QB:.*]] = arith.select %{{.*}}, %[[LEVEL]], %[[LONGER]] : i32
// CHECK: %[[HEADI:.*]] = arith.index_cast %[[HEAD]] : i32 to index
// CHECK: call @tile(%[[QB]], %[[HEADI]])
func.func @head_major(%seq_q: i32, %seq_k: i32, %batch: i32, %heads: i32) {
  flash.wg.tile_loop %seq_q, %seq_k, %batch, %heads block_m = 64 {
  ^bb0(%x: i32, %head: index, %num_m: i32, %kv_base: index, %q: !flash.ring_slot<stages = 1>):
    func.call @tile(%x, %head) : (i32, index) -> ()
    flash.wg.yield %kv_base : index
  }
  return
}

// flash.wg.claimed_tile_loop, the producer: one claim ahead; per tile
// the wait for its Q buffer's release (q_empty = 8 + buffer), the
// counter's reset on the launch's last claim, the claim decoded (query
// block last - level, -1 past the end) and stored at 2 x buffer, a plain
// arrive on q_full (6 + buffer) when the work ran out, the next claim.
// CHECK-LABEL: func.func @claimed_producer
// CHECK-SAME: %[[COUNTER:[^:]*]]: !llvm.ptr<1>, %[[SMEM:[^:]*]]: memref<?xi8, #gpu.address_space<workgroup>>, %[[WINDOW:[^:]*]]: index, %[[BARS:[^:]*]]: !nvgpu.mbarrier.group
// CHECK: %[[NUM:.*]] = arith.ceildivui
// CHECK: %[[HEADS:.*]] = arith.muli
// CHECK: %[[ITEMS:.*]] = arith.muli %[[NUM]], %[[HEADS]] : i32
// CHECK: %[[GRID:.*]] = arith.index_cast %grid_dim_x : index to i32
// CHECK: %[[LAST:.*]] = arith.subi %[[NUM]], %c1_i32 : i32
// CHECK: %[[START:.*]] = arith.addi %[[WINDOW]], %c98304 : index
// CHECK: %[[CLAIMS:.*]] = memref.view %[[SMEM]][%[[START]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4xi32, #gpu.address_space<workgroup>>
// CHECK: %[[DRAWS:.*]] = arith.addi %[[ITEMS]], %[[GRID]] : i32
// CHECK: %[[LASTCLAIM:.*]] = arith.subi %[[DRAWS]], %c1_i32 : i32
// CHECK: %[[FIRST:.*]] = llvm.atomicrmw add %[[COUNTER]], %c1_i32 monotonic
// CHECK: scf.while (%[[BASE:.*]] = %c0, %[[DONE:.*]] = %c0_i32, %[[CLAIM:.*]] = %[[FIRST]]) : (index, i32, i32) -> (i32, i32, index, i32, i32) {
// CHECK: %[[BUF32:.*]] = arith.andi %[[DONE]], %c1_i32 : i32
// CHECK: %[[BUF:.*]] = arith.index_cast %[[BUF32]] : i32 to index
// CHECK: %[[RELEASED:.*]] = arith.addi %[[BUF]], %c8 : index
// CHECK: nvgpu.mbarrier.try_wait.parity %[[BARS]][%[[RELEASED]]]
// CHECK: %[[ISLAST:.*]] = arith.cmpi eq, %[[CLAIM]], %[[LASTCLAIM]] : i32
// CHECK: scf.if %[[ISLAST]] {
// CHECK: llvm.atomicrmw xchg %[[COUNTER]], %c0_i32 monotonic
// CHECK: %[[VALID:.*]] = arith.cmpi ult, %[[CLAIM]], %[[ITEMS]] : i32
// CHECK: %[[ITEM:.*]] = arith.select %[[VALID]], %[[CLAIM]], %c0_i32 : i32
// CHECK: %[[HERE:.*]] = arith.minui
// CHECK: %[[LEVEL:.*]] = arith.divui %{{.*}}, %[[HERE]] : i32
// CHECK: %[[HEAD:.*]] = arith.addi %{{.*}}, %{{.*}} : i32
// CHECK: %[[X0:.*]] = arith.subi %[[LAST]], %[[LEVEL]] : i32
// CHECK: %[[X:.*]] = arith.select %[[VALID]], %[[X0]], %c-1_i32 : i32
// CHECK: memref.store %[[X]], %[[CLAIMS]]
// CHECK: memref.store %[[HEAD]], %[[CLAIMS]]
// CHECK: %[[NONE:.*]] = arith.xori %[[VALID]], %true : i1
// CHECK: scf.if %[[NONE]] {
// CHECK: %[[QFULL:.*]] = arith.addi %[[BUF]], %c6 : index
// CHECK: nvgpu.mbarrier.arrive %[[BARS]][%[[QFULL]]]
// CHECK: %[[NEXT:.*]] = scf.if %[[VALID]] -> (i32) {
// CHECK: llvm.atomicrmw add %[[COUNTER]], %c1_i32 monotonic
// CHECK: scf.condition(%[[VALID]]) %[[X]], %[[HEAD]], %[[BASE]], %[[DONE]], %[[NEXT]] : i32, i32, index, i32, i32
// CHECK: } do {
// CHECK: ^bb0(%[[TX:.*]]: i32, %[[TH:.*]]: i32, %[[TB:.*]]: index, %[[TD:.*]]: i32, %[[TC:.*]]: i32):
// CHECK: %[[HEADI:.*]] = arith.index_cast %[[TH]] : i32 to index
// CHECK: call @tile(%[[TX]], %[[HEADI]])
// CHECK: %[[NB:.*]] = arith.addi %[[TB]], %[[TB]] : index
// CHECK: %[[ND:.*]] = arith.addi %[[TD]], %c1_i32 : i32
// CHECK: scf.yield %[[NB]], %[[ND]], %[[TC]] : index, i32, i32
func.func @claimed_producer(%seq_q: i32, %seq_k: i32, %batch: i32, %heads: i32,
                            %counter: !llvm.ptr<1>, %smem: !smem, %window: index, %bars: !bars) {
  flash.wg.claimed_tile_loop %seq_q, %seq_k, %batch, %heads counter %counter : !llvm.ptr<1>
      claims %smem[%window + 98304], %bars[q_full = 6, q_empty = 8] block_m = 128 sections = 32768 : !smem, !bars {
  ^bb0(%x: i32, %head: index, %num_m: i32, %kv_base: index, %q: !flash.ring_slot<stages = 2>):
    func.call @tile(%x, %head) : (i32, index) -> ()
    flash.wg.yield %kv_base : index
  }
  return
}

// The consumers: per tile the wait for its Q (q_full = 6 + buffer), then
// the claim read back; a negative query block ends the loop.
// CHECK-LABEL: func.func @claimed_consumer
// CHECK-NOT: llvm.atomicrmw
// CHECK: %[[CLAIMS:.*]] = memref.view
// CHECK: scf.while (%[[BASE:.*]] = %c0, %[[DONE:.*]] = %c0_i32) : (index, i32) -> (i32, i32, index, i32) {
// CHECK: %[[QFULL:.*]] = arith.addi %{{.*}}, %c6 : index
// CHECK: nvgpu.mbarrier.try_wait.parity %{{.*}}[%[[QFULL]]]
// CHECK: %[[X:.*]] = memref.load %[[CLAIMS]]
// CHECK: %[[HEAD:.*]] = memref.load %[[CLAIMS]]
// CHECK: %[[VALID:.*]] = arith.cmpi sge, %[[X]], %c0_i32 : i32
// CHECK: scf.condition(%[[VALID]]) %[[X]], %[[HEAD]], %[[BASE]], %[[DONE]] : i32, i32, index, i32
// CHECK: call @tile(
// CHECK-NOT: flash.wg
func.func @claimed_consumer(%seq_q: i32, %seq_k: i32, %batch: i32, %heads: i32,
                            %smem: !smem, %window: index, %bars: !bars) {
  flash.wg.claimed_tile_loop %seq_q, %seq_k, %batch, %heads
      claims %smem[%window + 98304], %bars[q_full = 6, q_empty = 8] block_m = 128 sections = 32768 : !smem, !bars {
  ^bb0(%x: i32, %head: index, %num_m: i32, %kv_base: index, %q: !flash.ring_slot<stages = 2>):
    func.call @tile(%x, %head) : (i32, index) -> ()
    flash.wg.yield %kv_base : index
  }
  return
}

// flash.wg.packed_tile: y is a rank times heads plus the head; a batch of
// at most long_first_limit sequences is ranked longest first by every
// thread of the first `sequences` (count of those longer, or as long and
// before), the one of the block's rank published through shared memory
// behind a block barrier. The sequence's rows are clamped into the tensors
// and x counts its query blocks from the last.
// CHECK-LABEL: func.func @packed_tile
// CHECK-SAME: (%[[CQ:.*]]: !llvm.ptr<1>, %[[CK:.*]]: !llvm.ptr<1>, %[[H:.*]]: i32, %[[TQ:.*]]: i32, %[[TK:.*]]: i32, %[[SMEM:.*]]: memref<?xi8, #gpu.address_space<workgroup>>, %[[OFF:.*]]: index)
// CHECK: %[[X:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK: %[[Y:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK: %[[GY:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK: %[[S:.*]] = arith.divui %[[GY]], %[[H]] : i32
// CHECK: %[[RANK:.*]] = arith.divui %[[Y]], %[[H]] : i32
// CHECK: %[[HEAD:.*]] = arith.remui %[[Y]], %[[H]] : i32
// CHECK: %[[SLOT:.*]] = memref.view %[[SMEM]][%[[OFF]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<1xi32, #gpu.address_space<workgroup>>
// CHECK: %[[SMALL:.*]] = arith.cmpi ule, %[[S]], %c32_i32 : i32
// CHECK: %[[SEQ:.*]] = scf.if %[[SMALL]] -> (i32) {
// CHECK:   %[[T:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK:   %[[MINE:.*]] = arith.cmpi ult, %[[T]], %[[S]] : i32
// CHECK:   scf.if %[[MINE]] {
// CHECK:     %[[COUNT:.*]] = scf.for %[[U:.*]] = %c0_i32 to %[[S]] step %c1_i32 iter_args(%[[ACC:.*]] = %c0_i32) -> (i32)  : i32 {
// CHECK:       arith.cmpi sgt
// CHECK:       arith.cmpi ult, %[[U]], %[[T]] : i32
// CHECK:       arith.cmpi eq
// CHECK:     %[[MATCH:.*]] = arith.cmpi eq, %[[COUNT]], %[[RANK]] : i32
// CHECK:     scf.if %[[MATCH]] {
// CHECK:       memref.store %[[T]], %[[SLOT]][%c0]
// CHECK:   gpu.barrier
// CHECK:   %[[PICK:.*]] = memref.load %[[SLOT]][%c0]
// CHECK:   scf.yield %[[PICK]] : i32
// CHECK: } else {
// CHECK:   scf.yield %[[RANK]] : i32
// CHECK: llvm.getelementptr %[[CQ]]
// CHECK: %[[Q0:.*]] = arith.minsi %{{.*}}, %[[TQ]] : i32
// CHECK: %[[QEND:.*]] = arith.minsi %{{.*}}, %[[TQ]] : i32
// CHECK: %[[LQ:.*]] = arith.subi %[[QEND]], %[[Q0]] : i32
// CHECK: llvm.getelementptr %[[CK]]
// CHECK: %[[K0:.*]] = arith.minsi %{{.*}}, %[[TK]] : i32
// CHECK: %[[KEND:.*]] = arith.minsi %{{.*}}, %[[TK]] : i32
// CHECK: %[[LK:.*]] = arith.subi %[[KEND]], %[[K0]] : i32
// CHECK: %[[UP:.*]] = arith.addi %[[LQ]], %c127_i32 : i32
// CHECK: %[[QBS:.*]] = arith.divui %[[UP]], %c128_i32 : i32
// CHECK: %[[LAST:.*]] = arith.subi %[[QBS]], %c1_i32 : i32
// CHECK: %[[QB:.*]] = arith.subi %[[LAST]], %[[X]] : i32
// CHECK: %[[HEADI:.*]] = arith.index_cast %[[HEAD]] : i32 to index
// CHECK: call @tile7(%[[QB]], %[[HEADI]], %[[QBS]], %[[Q0]], %[[K0]], %[[LQ]], %[[LK]])
func.func private @tile7(i32, index, i32, i32, i32, i32, i32)
func.func @packed_tile(%cq: !llvm.ptr<1>, %ck: !llvm.ptr<1>, %heads: i32, %tq: i32, %tk: i32, %smem: !smem, %off: index) {
  %qb, %h, %qbs, %q0, %k0, %lq, %lk = flash.wg.packed_tile %cq, %ck, %heads, %tq, %tk, %smem[%off] block_m = 128 long_first_limit = 32 : !llvm.ptr<1>, !llvm.ptr<1>, !smem
  func.call @tile7(%qb, %h, %qbs, %q0, %k0, %lq, %lk) : (i32, index, i32, i32, i32, i32, i32) -> ()
  return
}

// long_first_limit = 0 keeps the batch's order: the rank is the sequence.
// CHECK-LABEL: func.func @packed_tile_in_order
// CHECK-NOT: gpu.barrier
// CHECK: arith.divui %{{.*}}, %{{.*}} : i32
// CHECK: %[[RANK:.*]] = arith.divui %{{.*}}, %{{.*}} : i32
// CHECK-NOT: gpu.barrier
// CHECK: %[[E:.*]] = arith.extui %[[RANK]] : i32 to i64
// CHECK: llvm.getelementptr %{{.*}}[%[[E]]]
func.func @packed_tile_in_order(%cq: !llvm.ptr<1>, %ck: !llvm.ptr<1>, %heads: i32, %tq: i32, %tk: i32, %smem: memref<?xi8, #gpu.address_space<workgroup>>, %off: index) {
  %qb, %h, %qbs, %q0, %k0, %lq, %lk = flash.wg.packed_tile %cq, %ck, %heads, %tq, %tk, %smem[%off] block_m = 64 long_first_limit = 0 : !llvm.ptr<1>, !llvm.ptr<1>, memref<?xi8, #gpu.address_space<workgroup>>
  func.call @tile7(%qb, %h, %qbs, %q0, %k0, %lq, %lk) : (i32, index, i32, i32, i32, i32, i32) -> ()
  return
}
