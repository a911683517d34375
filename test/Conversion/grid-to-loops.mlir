// RUN: flash-opt %s -split-input-file -convert-flash-grid-to-loops | FileCheck %s

// CHECK-LABEL: func.func @two_axes
// CHECK-SAME: (%[[X:.*]]: index, %[[Y:.*]]: index, %[[M:.*]]: memref<?x?xindex>)
// CHECK-NOT: flash.grid
// CHECK-NOT: flash.program_id
// CHECK: scf.for %[[I:.*]] = %c0 to %[[X]] step %c1 {
// CHECK:   scf.for %[[J:.*]] = %c0 to %[[Y]] step %c1 {
// CHECK:     memref.store %[[J]], %[[M]][%[[I]], %[[J]]]
func.func @two_axes(%x: index, %y: index, %m: memref<?x?xindex>) {
  flash.grid %x, %y {
    %i = flash.program_id 0
    %j = flash.program_id 1
    memref.store %j, %m[%i, %j] : memref<?x?xindex>
  }
  return
}

// -----

// A nested grid's program ids are its own.
// CHECK-LABEL: func.func @nested
// CHECK: scf.for %[[OUTER:.*]] = %c0 to %{{.*}} step %c1 {
// CHECK:   scf.for %[[INNER:.*]] = %c0{{.*}} to %{{.*}} step %c1{{.*}} {
// CHECK:     memref.store %[[OUTER]], %{{.*}}[%[[INNER]]]
func.func @nested(%n: index, %m: memref<?xindex>) {
  flash.grid %n {
    %outer = flash.program_id 0
    flash.grid %n {
      %inner = flash.program_id 0
      memref.store %outer, %m[%inner] : memref<?xindex>
    }
  }
  return
}
