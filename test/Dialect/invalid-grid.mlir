// RUN: flash-opt %s -split-input-file -verify-diagnostics

func.func @axis_outside_grid(%n: index) {
  flash.grid %n {
    // expected-error @+1 {{'flash.program_id' op axis 1 is outside the enclosing 1-d flash.grid}}
    %y = flash.program_id 1
  }
  return
}

// -----

func.func @no_sizes() {
  // expected-error @+1 {{'flash.grid' op expects 1 to 3 grid sizes, got 0}}
  flash.grid {
  }
  return
}

// -----

func.func @four_sizes(%n: index) {
  // expected-error @+1 {{expects 1 to 3 grid sizes, got 4}}
  flash.grid %n, %n, %n, %n {
  }
  return
}

// -----

func.func @block_arguments(%n: index) {
  // expected-error @+1 {{body must take no arguments; read the coordinates with flash.program_id}}
  "flash.grid"(%n) ({
  ^bb0(%i: index):
  }) : (index) -> ()
  return
}
