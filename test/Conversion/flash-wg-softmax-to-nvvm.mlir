// RUN: flash-opt %s -split-input-file -convert-flash-wg-to-nvvm | FileCheck %s

// The softmax family of the warp-specialised level and what each op becomes
// on a thread's registers. In a 64 x 16 accumulator a thread holds 8
// registers: i = 0, 1, 4, 5 in its first row (columns 0, 1, 8, 9 past
// 2 (lane % 4)), i = 2, 3, 6, 7 in its second (the same columns); a row
// vector holds its two rows.

!acc = !flash.fragment<64x16xf32, #flash.wgmma_accumulator>
!rows = !flash.fragment<64xf32, #flash.wgmma_rows>
!limits = !flash.fragment<64xi32, #flash.wgmma_rows>
!partials = !flash.fragment<64xf32, #flash.wgmma_row_partials>

// mask_columns: the thread's first column (first + 2 (lane % 4)) taken from
// each row's limit once, then one compare with the register's column offset
// and one select of -inf per register.
// CHECK-LABEL: func.func @mask_columns
// CHECK-SAME: (%[[X:.*]]: f32, %[[L0:.*]]: i32, %[[L1:.*]]: i32, %[[FIRST:.*]]: i32)
// CHECK-DAG: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : i32
// CHECK-DAG: %[[C9:.*]] = arith.constant 9 : i32
// CHECK: %[[TID:.*]] = gpu.thread_id  x
// CHECK: %[[T32:.*]] = arith.index_cast %[[TID]] : index to i32
// CHECK: %[[T:.*]] = arith.remui %[[T32]], %{{.*}} : i32
// CHECK: %[[LANE:.*]] = arith.remui %[[T]], %{{.*}} : i32
// CHECK: %[[QUAD:.*]] = arith.remui %[[LANE]], %{{.*}} : i32
// CHECK: %[[COL:.*]] = arith.muli %[[QUAD]], %{{.*}} : i32
// CHECK: %[[BASE:.*]] = arith.addi %[[FIRST]], %[[COL]] : i32
// CHECK: %[[R0:.*]] = arith.subi %[[L0]], %[[BASE]] : i32
// CHECK: %[[R1:.*]] = arith.subi %[[L1]], %[[BASE]] : i32
// CHECK: %[[K0:.*]] = arith.cmpi sgt, %[[R0]], %[[C0]] : i32
// CHECK: arith.select %[[K0]], %{{.*}}, %[[NEGINF]] : f32
// CHECK: arith.cmpi sgt, %[[R0]], %[[C1]] : i32
// CHECK: arith.cmpi sgt, %[[R1]], %[[C0]] : i32
// CHECK: arith.cmpi sgt, %[[R1]], %[[C1]] : i32
// CHECK: arith.cmpi sgt, %[[R0]], %[[C8]] : i32
// CHECK: arith.cmpi sgt, %[[R0]], %[[C9]] : i32
// CHECK: arith.cmpi sgt, %[[R1]], %[[C8]] : i32
// CHECK: %[[K7:.*]] = arith.cmpi sgt, %[[R1]], %[[C9]] : i32
// CHECK: %[[S7:.*]] = arith.select %[[K7]], %{{.*}}, %[[NEGINF]] : f32
// CHECK: llvm.insertvalue %[[S7]], %{{.*}}[7]
// CHECK-NOT: flash.wg
func.func @mask_columns(%x: f32, %l0: i32, %l1: i32, %first: i32) -> f32 {
  %s = flash.wg.fragment_from_values %x, %x, %x, %x, %x, %x, %x, %x : !acc
  %limit = flash.wg.fragment_from_values %l0, %l1 : !limits
  %m = flash.wg.mask_columns %s, %limit, %first : !acc, !limits
  %v:8 = flash.wg.fragment_values %m : !acc
  return %v#7 : f32
}

// -----

!acc = !flash.fragment<64x16xf32, #flash.wgmma_accumulator>
!rows = !flash.fragment<64xf32, #flash.wgmma_rows>
!partials = !flash.fragment<64xf32, #flash.wgmma_row_partials>

// row_max to whole rows: a tree over the row's four registers, then the
// quad's two butterfly shuffles. row_sum to partials: the tree only; from
// partials to rows: the shuffles only.
// CHECK-LABEL: func.func @row_reductions
// CHECK-SAME: (%[[X0:.*]]: f32, %[[X1:.*]]: f32, %[[X2:.*]]: f32, %[[X3:.*]]: f32)
// CHECK: %[[A:.*]] = arith.maxnumf %[[E0:.*]], %[[E1:.*]] : f32
// CHECK: %[[B:.*]] = arith.maxnumf %[[E4:.*]], %[[E5:.*]] : f32
// CHECK: %[[M0:.*]] = arith.maxnumf %[[A]], %[[B]] : f32
// CHECK: %[[SH1:.*]] = nvvm.shfl.sync  bfly %{{.*}}, %[[M0]], %[[ONE:.*]], %[[MASK31:.*]] : f32 -> f32
// CHECK: %[[M1:.*]] = arith.maxnumf %[[M0]], %[[SH1]] : f32
// CHECK: %[[SH2:.*]] = nvvm.shfl.sync  bfly %{{.*}}, %[[M1]], %[[TWO:.*]], %[[MASK31]] : f32 -> f32
// CHECK: %[[ROWMAX0:.*]] = arith.maxnumf %[[M1]], %[[SH2]] : f32
// CHECK: arith.maxnumf
// CHECK: nvvm.shfl.sync  bfly
// CHECK: nvvm.shfl.sync  bfly
// CHECK: %[[ROWMAX1:.*]] = arith.maxnumf
// CHECK: %[[P0:.*]] = arith.addf
// CHECK: %[[P1:.*]] = arith.addf
// CHECK: %[[PART0:.*]] = arith.addf %[[P0]], %[[P1]] : f32
// CHECK-NOT: nvvm.shfl.sync
// CHECK: arith.addf
// CHECK: arith.addf
// CHECK: %[[PART1:.*]] = arith.addf
// CHECK: %[[Q0:.*]] = nvvm.shfl.sync  bfly %{{.*}}, %[[PART0]], %[[ONE]], %[[MASK31]] : f32 -> f32
// CHECK: %[[Q1:.*]] = arith.addf %[[PART0]], %[[Q0]] : f32
// CHECK: %[[Q2:.*]] = nvvm.shfl.sync  bfly %{{.*}}, %[[Q1]], %[[TWO]], %[[MASK31]] : f32 -> f32
// CHECK: %[[SUM0:.*]] = arith.addf %[[Q1]], %[[Q2]] : f32
// CHECK: nvvm.shfl.sync  bfly %{{.*}}, %[[PART1]]
// CHECK: arith.addf
// CHECK: nvvm.shfl.sync  bfly
// CHECK: %[[SUM1:.*]] = arith.addf
// CHECK: return %[[ROWMAX0]], %[[ROWMAX1]], %[[PART0]], %[[SUM0]], %[[SUM1]]
func.func @row_reductions(%x0: f32, %x1: f32, %x2: f32, %x3: f32)
    -> (f32, f32, f32, f32, f32) {
  %s = flash.wg.fragment_from_values %x0, %x1, %x2, %x3, %x0, %x1, %x2, %x3 : !acc
  %mx = flash.wg.row_max %s : !acc -> !rows
  %part = flash.wg.row_sum %s : !acc -> !partials
  %l = flash.wg.row_sum %part : !partials -> !rows
  %m:2 = flash.wg.fragment_values %mx : !rows
  %p:2 = flash.wg.fragment_values %part : !partials
  %r:2 = flash.wg.fragment_values %l : !rows
  return %m#0, %m#1, %p#0, %r#0, %r#1 : f32, f32, f32, f32, f32
}

// -----

!acc = !flash.fragment<64x8xf32, #flash.wgmma_accumulator>
!rows = !flash.fragment<64xf32, #flash.wgmma_rows>

// scaled_exp2: one fma with the row's bias and one flush-to-zero ex2 per
// register; scale_rows: one multiply by the row's factor.
// CHECK-LABEL: func.func @exp2_and_scale
// CHECK-SAME: (%[[X:.*]]: f32, %[[B0:.*]]: f32, %[[B1:.*]]: f32, %[[SCALE:.*]]: f32)
// CHECK: %[[T0:.*]] = math.fma %{{.*}}, %[[SCALE]], %[[B0]] : f32
// CHECK: %[[P0:.*]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%[[T0]])
// CHECK: math.fma %{{.*}}, %[[SCALE]], %[[B0]] : f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK: math.fma %{{.*}}, %[[SCALE]], %[[B1]] : f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK: math.fma %{{.*}}, %[[SCALE]], %[[B1]] : f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK: arith.mulf %{{.*}}, %[[B0]] : f32
// CHECK: arith.mulf %{{.*}}, %[[B0]] : f32
// CHECK: arith.mulf %{{.*}}, %[[B1]] : f32
// CHECK: arith.mulf %{{.*}}, %[[B1]] : f32
// CHECK-NOT: flash.wg
func.func @exp2_and_scale(%x: f32, %b0: f32, %b1: f32, %scale: f32) -> f32 {
  %s = flash.wg.fragment_from_values %x, %x, %x, %x : !acc
  %bias = flash.wg.fragment_from_values %b0, %b1 : !rows
  %p = flash.wg.scaled_exp2 %s, %bias, %scale : !acc, !rows
  %o = flash.wg.scale_rows %p, %bias : !acc, !rows
  %v:4 = flash.wg.fragment_values %o : !acc
  return %v#3 : f32
}

// -----

// truncf: registers 2k and 2k+1 (neighbouring columns) rounded together by
// one vector fptrunc (cvt.rn.bf16x2.f32), giving the A operand's i32.
// CHECK-LABEL: func.func @truncf
// CHECK-SAME: (%[[X:.*]]: f32, %[[Y:.*]]: f32)
// CHECK-COUNT-4: llvm.fptrunc %{{.*}} : vector<2xf32> to vector<2xbf16>
// CHECK: %[[W3:.*]] = llvm.bitcast %{{.*}} : vector<2xbf16> to i32
// CHECK: return %{{.*}}, %{{.*}}, %{{.*}}, %[[W3]] : i32, i32, i32, i32
func.func @truncf(%x: f32, %y: f32) -> (i32, i32, i32, i32) {
  %s = flash.wg.fragment_from_values %x, %y, %x, %y, %x, %y, %x, %y : !flash.fragment<64x16xf32, #flash.wgmma_accumulator>
  %p = flash.wg.truncf %s : !flash.fragment<64x16xf32, #flash.wgmma_accumulator> -> !flash.fragment<64x16xbf16, #flash.wgmma_operand_a>
  %v:4 = flash.wg.fragment_values %p : !flash.fragment<64x16xbf16, #flash.wgmma_operand_a>
  return %v#0, %v#1, %v#2, %v#3 : i32, i32, i32, i32
}

// -----

!acc = !flash.fragment<64x16xf32, #flash.wgmma_accumulator>
!rows = !flash.fragment<64xf32, #flash.wgmma_rows>
!partials = !flash.fragment<64xf32, #flash.wgmma_row_partials>
!p16 = !flash.fragment<64x16xbf16, #flash.wgmma_operand_a>

// softmax_update with the exact running max: per row m = max(m_old, row
// max * scale), alpha = 2^(m_old - m) and the exps' bias -m, both with 0 for
// an m still at -inf; l = l_old * alpha + the thread's part of the row sum;
// P rounded in pairs. `moved` is true.
// CHECK-LABEL: func.func @softmax_update_exact
// CHECK-SAME: (%[[X:.*]]: f32, %[[M0:.*]]: f32, %[[M1:.*]]: f32, %[[L0:.*]]: f32, %[[L1:.*]]: f32, %[[SCALE:.*]]: f32)
// CHECK-DAG: %[[TRUE:.*]] = arith.constant true
// CHECK-DAG: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: nvvm.shfl.sync  bfly
// CHECK: %[[RM0:.*]] = arith.mulf %{{.*}}, %[[SCALE]] : f32
// CHECK: %[[RM1:.*]] = arith.mulf %{{.*}}, %[[SCALE]] : f32
// CHECK: %[[MN0:.*]] = arith.maxnumf %[[M0]], %[[RM0]] : f32
// CHECK: %[[INF0:.*]] = arith.cmpf oeq, %[[MN0]], %[[NEGINF]] : f32
// CHECK: %[[USE0:.*]] = arith.select %[[INF0]], %[[ZERO]], %[[MN0]] : f32
// CHECK: %[[D0:.*]] = arith.subf %[[M0]], %[[USE0]] : f32
// CHECK: %[[ALPHA0:.*]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%[[D0]])
// CHECK: %[[BIAS0:.*]] = arith.negf %[[USE0]] : f32
// CHECK: %[[MN1:.*]] = arith.maxnumf %[[M1]], %[[RM1]] : f32
// CHECK: math.fma %{{.*}}, %[[SCALE]], %[[BIAS0]] : f32
// CHECK: arith.addf
// CHECK: arith.addf
// CHECK: %[[SUM0:.*]] = arith.addf
// CHECK: %[[LN0:.*]] = math.fma %[[L0]], %[[ALPHA0]], %[[SUM0]] : f32
// CHECK: %[[LN1:.*]] = math.fma %[[L1]], %{{.*}}, %{{.*}} : f32
// CHECK: llvm.fptrunc %{{.*}} : vector<2xf32> to vector<2xbf16>
// CHECK: llvm.bitcast %{{.*}} : vector<2xbf16> to i32
// CHECK: return %{{.*}}, %[[MN1]], %[[LN1]], %[[TRUE]]
func.func @softmax_update_exact(%x: f32, %m0: f32, %m1: f32, %l0: f32,
                                %l1: f32, %scale: f32) -> (i32, f32, f32, i1) {
  %s = flash.wg.fragment_from_values %x, %x, %x, %x, %x, %x, %x, %x : !acc
  %mo = flash.wg.fragment_from_values %m0, %m1 : !rows
  %lo = flash.wg.fragment_from_values %l0, %l1 : !partials
  %p, %m, %l, %alpha, %moved = flash.wg.softmax_update %s, %mo, %lo, %scale
      : !acc, !rows, !partials -> !p16
  %pv:4 = flash.wg.fragment_values %p : !p16
  %mv:2 = flash.wg.fragment_values %m : !rows
  %lv:2 = flash.wg.fragment_values %l : !partials
  return %pv#3, %mv#1, %lv#1, %moved : i32, f32, f32, i1
}

// lag_max: a row's reference moves to the tile's max only past m_old + 8;
// `moved` is the or of the two rows' decisions.
// CHECK-LABEL: func.func @softmax_update_lag_max
// CHECK-SAME: (%[[X:.*]]: f32, %[[M0:.*]]: f32, %[[M1:.*]]: f32, %{{.*}}: f32, %{{.*}}: f32, %[[SCALE:.*]]: f32)
// CHECK-DAG: %[[LAG:.*]] = arith.constant 8.000000e+00 : f32
// CHECK: %[[RM0:.*]] = arith.mulf %{{.*}}, %[[SCALE]] : f32
// CHECK: %[[RM1:.*]] = arith.mulf %{{.*}}, %[[SCALE]] : f32
// CHECK: %[[BAR0:.*]] = arith.addf %[[M0]], %[[LAG]] : f32
// CHECK: %[[MOVES0:.*]] = arith.cmpf ogt, %[[RM0]], %[[BAR0]] : f32
// CHECK: %[[MN0:.*]] = arith.select %[[MOVES0]], %[[RM0]], %[[M0]] : f32
// CHECK: %[[BAR1:.*]] = arith.addf %[[M1]], %[[LAG]] : f32
// CHECK: %[[MOVES1:.*]] = arith.cmpf ogt, %[[RM1]], %[[BAR1]] : f32
// CHECK: %[[MN1:.*]] = arith.select %[[MOVES1]], %[[RM1]], %[[M1]] : f32
// CHECK: %[[MOVED:.*]] = arith.ori %[[MOVES0]], %[[MOVES1]] : i1
// CHECK-NOT: arith.maxnumf %[[M0]]
// CHECK: return %{{.*}}, %[[MN1]], %{{.*}}, %[[MOVED]]
func.func @softmax_update_lag_max(%x: f32, %m0: f32, %m1: f32, %l0: f32,
                                  %l1: f32, %scale: f32) -> (i32, f32, f32, i1) {
  %s = flash.wg.fragment_from_values %x, %x, %x, %x, %x, %x, %x, %x : !acc
  %mo = flash.wg.fragment_from_values %m0, %m1 : !rows
  %lo = flash.wg.fragment_from_values %l0, %l1 : !partials
  %p, %m, %l, %alpha, %moved = flash.wg.softmax_update %s, %mo, %lo, %scale
      lag_max : !acc, !rows, !partials -> !p16
  %pv:4 = flash.wg.fragment_values %p : !p16
  %mv:2 = flash.wg.fragment_values %m : !rows
  %lv:2 = flash.wg.fragment_values %l : !partials
  return %pv#3, %mv#1, %lv#1, %moved : i32, f32, f32, i1
}

// -----

!acc = !flash.fragment<64x16xf32, #flash.wgmma_accumulator>
!rows = !flash.fragment<64xf32, #flash.wgmma_rows>
!partials = !flash.fragment<64xf32, #flash.wgmma_row_partials>
!p16 = !flash.fragment<64x16xf16, #flash.wgmma_operand_a>

// speculative (f16): P against m_old with no row max; a thread's partial
// sum past 2^15, or a row with m_old = -inf, makes its warp (a vote) take
// the row max and compute P again in a branch. The branch yields alpha, m,
// the partial sums and P's pairs; the kept values are 1, m_old and the
// speculative ones.
// CHECK-LABEL: func.func @softmax_update_speculative
// CHECK-SAME: (%[[X:.*]]: f32, %[[M0:.*]]: f32, %[[M1:.*]]: f32, %[[L0:.*]]: f32, %[[L1:.*]]: f32, %[[SCALE:.*]]: f32)
// CHECK-DAG: %[[BOUND:.*]] = arith.constant 3.276800e+04 : f32
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NOT: nvvm.shfl.sync
// CHECK: %[[OVER0:.*]] = arith.cmpf ugt, %{{.*}}, %[[BOUND]] : f32
// CHECK: %[[NOKEY0:.*]] = arith.cmpf oeq, %[[M0]], %{{.*}} : f32
// CHECK: %[[REDO0:.*]] = arith.ori %[[OVER0]], %[[NOKEY0]] : i1
// CHECK: %[[REDO1:.*]] = arith.ori
// CHECK: %[[REDO:.*]] = arith.ori %[[REDO0]], %[[REDO1]] : i1
// CHECK: llvm.bitcast %{{.*}} : vector<2xf16> to i32
// CHECK: %[[WARP:.*]] = nvvm.vote.sync  any %{{.*}}, %[[REDO]] -> i1
// CHECK: %[[OUT:.*]]:10 = scf.if %[[WARP]] -> (f32, f32, f32, f32, f32, f32, i32, i32, i32, i32) {
// CHECK: nvvm.shfl.sync  bfly
// CHECK: arith.maxnumf %[[M0]], %{{.*}} : f32
// CHECK: scf.yield
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[ONE]], %[[ONE]], %[[M0]], %[[M1]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} :
// CHECK: %[[LN1:.*]] = math.fma %[[L1]], %[[OUT]]#1, %[[OUT]]#5 : f32
// CHECK: return %[[OUT]]#9, %[[OUT]]#3, %[[LN1]], %[[REDO]]
func.func @softmax_update_speculative(%x: f32, %m0: f32, %m1: f32, %l0: f32,
                                      %l1: f32, %scale: f32)
    -> (i32, f32, f32, i1) {
  %s = flash.wg.fragment_from_values %x, %x, %x, %x, %x, %x, %x, %x : !acc
  %mo = flash.wg.fragment_from_values %m0, %m1 : !rows
  %lo = flash.wg.fragment_from_values %l0, %l1 : !partials
  %p, %m, %l, %alpha, %moved = flash.wg.softmax_update %s, %mo, %lo, %scale
      speculative : !acc, !rows, !partials -> !p16
  %pv:4 = flash.wg.fragment_values %p : !p16
  %mv:2 = flash.wg.fragment_values %m : !rows
  %lv:2 = flash.wg.fragment_values %l : !partials
  return %pv#3, %mv#1, %lv#1, %moved : i32, f32, f32, i1
}

// scale_rows ... if_moved: a warp vote on `moved`, then the multiplies in
// the branch of a warp where one lane moved, the input in the other.
// CHECK-LABEL: func.func @scale_rows_if_moved
// CHECK-SAME: (%[[X:.*]]: f32, %[[A0:.*]]: f32, %[[A1:.*]]: f32, %[[MOVED:.*]]: i1)
// CHECK: %[[ANY:.*]] = nvvm.vote.sync  any %{{.*}}, %[[MOVED]] -> i1
// CHECK: %[[OUT:.*]]:8 = scf.if %[[ANY]] -> (f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK-COUNT-4: arith.mulf %{{.*}}, %[[A0]] : f32
// CHECK: scf.yield
// CHECK: } else {
// CHECK-NOT: arith.mulf
// CHECK: scf.yield
// CHECK-NOT: arith.mulf
// CHECK: llvm.insertvalue %[[OUT]]#7
// CHECK: return
func.func @scale_rows_if_moved(%x: f32, %a0: f32, %a1: f32, %moved: i1) -> f32 {
  %o = flash.wg.fragment_from_values %x, %x, %x, %x, %x, %x, %x, %x : !acc
  %a = flash.wg.fragment_from_values %a0, %a1 : !rows
  %o2 = flash.wg.scale_rows %o, %a if_moved %moved : !acc, !rows
  %v:8 = flash.wg.fragment_values %o2 : !acc
  return %v#7 : f32
}

// -----

!acc = !flash.fragment<64x16xf32, #flash.wgmma_accumulator>
!limits = !flash.fragment<64xi32, #flash.wgmma_rows>

// mask_keys: each row's limit, min(seq_k, row + seq_k - seq_q + 1) under
// the causal mask and seq_k without it, taken from the thread's first
// column like mask_columns' limits.
// CHECK-LABEL: func.func @mask_keys_causal
// CHECK-SAME: (%[[X:.*]]: f32, %[[R0:.*]]: i32, %[[R1:.*]]: i32, %[[FIRST:.*]]: i32, %[[SQ:.*]]: i32, %[[SK:.*]]: i32)
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK: %[[DIAG:.*]] = arith.subi %[[SK]], %[[SQ]] : i32
// CHECK: %[[A0:.*]] = arith.addi %[[R0]], %[[DIAG]] : i32
// CHECK: %[[B0:.*]] = arith.addi %[[A0]], %[[ONE]] : i32
// CHECK: %[[LIM0:.*]] = arith.minsi %[[B0]], %[[SK]] : i32
// CHECK: %[[A1:.*]] = arith.addi %[[R1]], %[[DIAG]] : i32
// CHECK: %[[B1:.*]] = arith.addi %[[A1]], %[[ONE]] : i32
// CHECK: %[[LIM1:.*]] = arith.minsi %[[B1]], %[[SK]] : i32
// CHECK: %[[BASE:.*]] = arith.addi %[[FIRST]], %{{.*}} : i32
// CHECK: arith.subi %[[LIM0]], %[[BASE]] : i32
// CHECK: arith.subi %[[LIM1]], %[[BASE]] : i32
// CHECK-COUNT-8: arith.select
func.func @mask_keys_causal(%x: f32, %r0: i32, %r1: i32, %first: i32,
                            %sq: i32, %sk: i32) -> f32 {
  %s = flash.wg.fragment_from_values %x, %x, %x, %x, %x, %x, %x, %x : !acc
  %rows = flash.wg.fragment_from_values %r0, %r1 : !limits
  %m = flash.wg.mask_keys %s, %rows, %first, %sq, %sk causal : !acc, !limits
  %v:8 = flash.wg.fragment_values %m : !acc
  return %v#7 : f32
}

// CHECK-LABEL: func.func @mask_keys_length
// CHECK-SAME: (%[[X:.*]]: f32, %[[R0:.*]]: i32, %[[R1:.*]]: i32, %[[FIRST:.*]]: i32, %[[SQ:.*]]: i32, %[[SK:.*]]: i32)
// CHECK-NOT: arith.minsi
// CHECK: %[[BASE:.*]] = arith.addi %[[FIRST]], %{{.*}} : i32
// CHECK: arith.subi %[[SK]], %[[BASE]] : i32
// CHECK: arith.subi %[[SK]], %[[BASE]] : i32
// CHECK-COUNT-8: arith.select
func.func @mask_keys_length(%x: f32, %r0: i32, %r1: i32, %first: i32,
                            %sq: i32, %sk: i32) -> f32 {
  %s = flash.wg.fragment_from_values %x, %x, %x, %x, %x, %x, %x, %x : !acc
  %rows = flash.wg.fragment_from_values %r0, %r1 : !limits
  %m = flash.wg.mask_keys %s, %rows, %first, %sq, %sk : !acc, !limits
  %v:8 = flash.wg.fragment_values %m : !acc
  return %v#7 : f32
}
