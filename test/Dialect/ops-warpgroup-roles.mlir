// RUN: flash-opt %s | flash-opt | FileCheck %s
// RUN: flash-opt %s -mlir-print-op-generic | flash-opt | FileCheck %s
// An empty turn (one skipped to keep the consumers' turns paired) still
// synchronises: canonicalisation must not erase it as dead.
// RUN: flash-opt %s -canonicalize | FileCheck %s --check-prefix=KEPT

// The roles of a warp-specialised block: a producer warpgroup and consumer
// warpgroups, each region with its thread (and consumer) index.

// CHECK-LABEL: func.func @roles
// CHECK: flash.wg.warp_specialize consumers = 2, producer_regs = 24, consumer_regs = 240 producer {
// CHECK-NEXT: ^bb0(%[[T:.*]]: i32):
// CHECK-NEXT: arith.addi %[[T]], %{{.*}} : i32
// CHECK-NEXT: } consumer {
// CHECK-NEXT: ^bb0(%[[C:.*]]: i32, %[[T2:.*]]: i32):
// CHECK-NEXT: arith.muli %[[C]], %[[T2]] : i32
// CHECK-NEXT: }
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

// A ping-pong turn: the products issued in it come out as its results.
// CHECK-LABEL: func.func @turn
// CHECK: %[[R:.*]]:2 = flash.wg.pingpong_turn %{{.*}} -> i32, f32 {
// CHECK-NEXT: %[[A:.*]] = arith.addi
// CHECK-NEXT: flash.wg.yield %[[A]], %{{.*}} : i32, f32
// CHECK-NEXT: }
// CHECK: flash.wg.pingpong_turn %{{.*}} {
// CHECK-NEXT: }
// KEPT-LABEL: func.func @turn
// KEPT: flash.wg.pingpong_turn %{{.*}} -> i32, f32 {
// KEPT: flash.wg.pingpong_turn %{{.*}} {
// KEPT-NEXT: }
func.func @turn(%consumer: i32, %x: f32) -> (i32, f32) {
  %r:2 = flash.wg.pingpong_turn %consumer -> i32, f32 {
    %a = arith.addi %consumer, %consumer : i32
    flash.wg.yield %a, %x : i32, f32
  }
  flash.wg.pingpong_turn %consumer {
  }
  return %r#0, %r#1 : i32, f32
}
