// RUN: flash-opt %s | flash-opt | FileCheck %s

// CHECK-LABEL: func.func @grid
// CHECK: flash.grid %{{.*}}, %{{.*}}, %{{.*}} {
// CHECK:   flash.program_id 2
// CHECK: }
func.func @grid(%a: index, %b: index, %c: index, %m: memref<?xindex>) {
  flash.grid %a, %b, %c {
    %z = flash.program_id 2
    memref.store %z, %m[%z] : memref<?xindex>
  }
  return
}
