// RUN: flash-opt %s -split-input-file -verify-diagnostics

func.func @axis_out_of_range() -> index {
  // expected-error @+1 {{'flash.program_id' op axis must be 0, 1 or 2, got 3}}
  %0 = flash.program_id 3
  return %0 : index
}

// -----

func.func @negative_axis() -> index {
  // expected-error @+1 {{axis must be 0, 1 or 2, got -1}}
  %0 = flash.program_id -1
  return %0 : index
}

// -----

func.func @not_index() -> i32 {
  // expected-error @+1 {{result #0 must be index, but got 'i32'}}
  %0 = "flash.program_id"() {axis = 0 : i64} : () -> i32
  return %0 : i32
}
