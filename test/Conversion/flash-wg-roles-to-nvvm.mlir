// RUN: flash-opt %s -convert-flash-wg-to-nvvm | FileCheck %s

// flash.wg.warp_specialize: one scf.if on the warpgroup (thread / 128),
// warpgroup 0 the producer after setmaxnreg.dec, the rest the consumers
// after setmaxnreg.inc with their index (warpgroup - 1); both with the
// thread's index in its warpgroup.

// CHECK-LABEL: func.func @roles
// CHECK: %[[TID:.*]] = gpu.thread_id  x
// CHECK: %[[T32:.*]] = arith.index_cast %[[TID]] : index to i32
// CHECK: %[[WG:.*]] = arith.divui %[[T32]], %[[C128:.*]] : i32
// CHECK: %[[THREAD:.*]] = arith.remui %[[T32]], %[[C128]] : i32
// CHECK: %[[PRODUCER:.*]] = arith.cmpi eq, %[[WG]], %{{.*}} : i32
// CHECK: scf.if %[[PRODUCER]] {
// CHECK-NEXT: nvvm.setmaxregister  decrease 24
// CHECK-NEXT: arith.addi %[[THREAD]], %{{.*}} : i32
// CHECK-NEXT: } else {
// CHECK-NEXT: nvvm.setmaxregister  increase 240
// CHECK-NEXT: %[[CONSUMER:.*]] = arith.subi %[[WG]], %{{.*}} : i32
// CHECK-NEXT: arith.muli %[[CONSUMER]], %[[THREAD]] : i32
// CHECK-NEXT: }
// CHECK-NOT: flash.wg
func.func @roles(%x: i32) {
  flash.wg.warp_specialize consumers = 2, producer_regs = 24, consumer_regs = 240
  producer {
  ^bb0(%thread: i32):
    %a = arith.addi %thread, %x : i32
  } consumer {
  ^bb0(%consumer: i32, %thread: i32):
    %b = arith.muli %consumer, %thread : i32
  }
  return
}

// flash.wg.pingpong_turn: wait on named barrier 1 + consumer (both
// consumers, 256 threads), the region, then arrive on 2 - consumer; its
// results are the values the region yielded.
// CHECK-LABEL: func.func @turn
// CHECK-SAME: (%[[C:.*]]: i32, %[[X:.*]]: f32)
// CHECK: %[[MINE:.*]] = arith.addi %[[C]], %[[ONE:.*]] : i32
// CHECK-NEXT: nvvm.barrier id = %[[MINE]] number_of_threads = %[[N:.*]]
// CHECK-NEXT: %[[Y:.*]] = arith.mulf %[[X]], %[[X]] : f32
// CHECK-NEXT: %[[OTHER:.*]] = arith.subi %[[TWO:.*]], %[[C]] : i32
// CHECK-NEXT: nvvm.barrier.arrive id = %[[OTHER]] number_of_threads = %[[N]]
// CHECK-NEXT: return %[[Y]] : f32
func.func @turn(%consumer: i32, %x: f32) -> f32 {
  %y = flash.wg.pingpong_turn %consumer -> f32 {
    %m = arith.mulf %x, %x : f32
    flash.wg.yield %m : f32
  }
  return %y : f32
}
