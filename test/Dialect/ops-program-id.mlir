// RUN: flash-opt %s | flash-opt | FileCheck %s

// CHECK-LABEL: func.func @program_ids
// CHECK: %[[X:.*]] = flash.program_id 0
// CHECK: %[[Y:.*]] = flash.program_id 1
// CHECK: %[[Z:.*]] = flash.program_id 2
// CHECK: return %[[X]], %[[Y]], %[[Z]] : index, index, index
func.func @program_ids() -> (index, index, index) {
  %x = flash.program_id 0
  %y = flash.program_id 1
  %z = flash.program_id 2
  return %x, %y, %z : index, index, index
}
