// RUN: flash-opt %s -split-input-file -flash-gpu-schedule -convert-flash-to-gpu -verify-diagnostics

// Tile programs the GPU kernel does not implement, one diagnostic each.

func.func @untiled(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>, %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) {
  // expected-error @+1 {{flash-to-gpu: flash.attention must be tiled first (run -flash-tile -flash-fuse)}}
  flash.attention %q, %k, %v -> %o : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16> -> memref<?x?x?x128xbf16>
  return
}

// -----

// expected-error @+1 {{flash-to-gpu: f32 attention is not supported: the wgmma kernel takes bf16 or f16 operands}}
func.func @f32(%q: memref<?x?x?x64xf32>, %k: memref<?x?x?x64xf32>, %v: memref<?x?x?x64xf32>, %o: memref<?x?x?x64xf32>) attributes {flash.config = #flash.config<block_m = 64, block_n = 64, stages = 2, warpgroups = 1>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %zero_row = arith.constant dense<0.000000e+00> : tensor<64xf32>
  %ninf_row = arith.constant dense<0xFF800000> : tensor<64xf32>
  %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
  %b = memref.dim %q, %c0 : memref<?x?x?x64xf32>
  %h = memref.dim %q, %c1 : memref<?x?x?x64xf32>
  %nq = memref.dim %q, %c2 : memref<?x?x?x64xf32>
  %nk = memref.dim %k, %c2 : memref<?x?x?x64xf32>
  %tiles = arith.ceildivui %nq, %c64 : index
  %bh = arith.muli %b, %h : index
  flash.grid %tiles, %bh {
    %pid = flash.program_id 0
    %pbh = flash.program_id 1
    %bi = arith.divui %pbh, %h : index
    %hi = arith.remui %pbh, %h : index
    %row = arith.muli %pid, %c64 : index
    %qt = flash.load_tile %q[%bi, %hi, %row] : memref<?x?x?x64xf32> -> tensor<64x64xf32>
    %r:3 = scf.for %j = %c0 to %nk step %c64 iter_args(%acc = %zero, %m = %ninf_row, %l = %zero_row) -> (tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>) {
      %kt = flash.load_tile %k[%bi, %hi, %j] : memref<?x?x?x64xf32> -> tensor<64x64xf32>
      %vt = flash.load_tile %v[%bi, %hi, %j] : memref<?x?x?x64xf32> -> tensor<64x64xf32>
      %s = flash.dot %qt, %kt, %zero transpose_b : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
      %sm = flash.mask %s, %row, %j, %nq, %nk : tensor<64x64xf32>
      %p, %mn, %ln, %alpha = flash.softmax_update %sm, %m, %l base2 {scale = 0.180336878 : f32} : tensor<64x64xf32>, tensor<64xf32>
      %acc1 = flash.rescale %acc, %alpha : tensor<64x64xf32>, tensor<64xf32>
      %acc2 = flash.dot %p, %vt, %acc1 : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
      scf.yield %acc2, %mn, %ln : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>
    }
    %out, %lse = flash.finalize %r#0, %r#1, %r#2 base2 : tensor<64x64xf32>, tensor<64xf32>
    flash.store_tile %out, %o[%bi, %hi, %row] : tensor<64x64xf32> -> memref<?x?x?x64xf32>
  }
  return
}

// -----

// expected-error @+1 {{flash-to-gpu: missing the flash.config tile configuration}}
func.func @no_config(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>, %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %zero_row = arith.constant dense<0.000000e+00> : tensor<64xf32>
  %ninf_row = arith.constant dense<0xFF800000> : tensor<64xf32>
  %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
  %b = memref.dim %q, %c0 : memref<?x?x?x64xf16>
  %h = memref.dim %q, %c1 : memref<?x?x?x64xf16>
  %nq = memref.dim %q, %c2 : memref<?x?x?x64xf16>
  %nk = memref.dim %k, %c2 : memref<?x?x?x64xf16>
  %tiles = arith.ceildivui %nq, %c64 : index
  %bh = arith.muli %b, %h : index
  flash.grid %tiles, %bh {
    %pid = flash.program_id 0
    %pbh = flash.program_id 1
    %bi = arith.divui %pbh, %h : index
    %hi = arith.remui %pbh, %h : index
    %row = arith.muli %pid, %c64 : index
    %qt = flash.load_tile %q[%bi, %hi, %row] : memref<?x?x?x64xf16> -> tensor<64x64xf16>
    %r:3 = scf.for %j = %c0 to %nk step %c64 iter_args(%acc = %zero, %m = %ninf_row, %l = %zero_row) -> (tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>) {
      %kt = flash.load_tile %k[%bi, %hi, %j] : memref<?x?x?x64xf16> -> tensor<64x64xf16>
      %vt = flash.load_tile %v[%bi, %hi, %j] : memref<?x?x?x64xf16> -> tensor<64x64xf16>
      %s = flash.dot %qt, %kt, %zero transpose_b : tensor<64x64xf16>, tensor<64x64xf16> -> tensor<64x64xf32>
      %sm = flash.mask %s, %row, %j, %nq, %nk : tensor<64x64xf32>
      %p, %mn, %ln, %alpha = flash.softmax_update %sm, %m, %l base2 {scale = 0.180336878 : f32} : tensor<64x64xf32>, tensor<64xf32>
      %acc1 = flash.rescale %acc, %alpha : tensor<64x64xf32>, tensor<64xf32>
      %pt = arith.truncf %p : tensor<64x64xf32> to tensor<64x64xf16>
      %acc2 = flash.dot %pt, %vt, %acc1 : tensor<64x64xf16>, tensor<64x64xf16> -> tensor<64x64xf32>
      scf.yield %acc2, %mn, %ln : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>
    }
    %out, %lse = flash.finalize %r#0, %r#1, %r#2 base2 : tensor<64x64xf32>, tensor<64xf32>
    %ot = arith.truncf %out : tensor<64x64xf32> to tensor<64x64xf16>
    flash.store_tile %ot, %o[%bi, %hi, %row] : tensor<64x64xf16> -> memref<?x?x?x64xf16>
  }
  return
}

// -----

func.func @natural_exp(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>, %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) attributes {flash.config = #flash.config<block_m = 64, block_n = 64, stages = 2, warpgroups = 1>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %zero_row = arith.constant dense<0.000000e+00> : tensor<64xf32>
  %ninf_row = arith.constant dense<0xFF800000> : tensor<64xf32>
  %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
  %b = memref.dim %q, %c0 : memref<?x?x?x64xf16>
  %h = memref.dim %q, %c1 : memref<?x?x?x64xf16>
  %nq = memref.dim %q, %c2 : memref<?x?x?x64xf16>
  %nk = memref.dim %k, %c2 : memref<?x?x?x64xf16>
  %tiles = arith.ceildivui %nq, %c64 : index
  %bh = arith.muli %b, %h : index
  flash.grid %tiles, %bh {
    %pid = flash.program_id 0
    %pbh = flash.program_id 1
    %bi = arith.divui %pbh, %h : index
    %hi = arith.remui %pbh, %h : index
    %row = arith.muli %pid, %c64 : index
    %qt = flash.load_tile %q[%bi, %hi, %row] : memref<?x?x?x64xf16> -> tensor<64x64xf16>
    %r:3 = scf.for %j = %c0 to %nk step %c64 iter_args(%acc = %zero, %m = %ninf_row, %l = %zero_row) -> (tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>) {
      %kt = flash.load_tile %k[%bi, %hi, %j] : memref<?x?x?x64xf16> -> tensor<64x64xf16>
      %vt = flash.load_tile %v[%bi, %hi, %j] : memref<?x?x?x64xf16> -> tensor<64x64xf16>
      %s = flash.dot %qt, %kt, %zero transpose_b : tensor<64x64xf16>, tensor<64x64xf16> -> tensor<64x64xf32>
      %sm = flash.mask %s, %row, %j, %nq, %nk : tensor<64x64xf32>
      // expected-error @+1 {{flash-to-gpu: the GPU kernel needs the base-2 online softmax (run -flash-fuse)}}
      %p, %mn, %ln, %alpha = flash.softmax_update %sm, %m, %l {scale = 0.180336878 : f32} : tensor<64x64xf32>, tensor<64xf32>
      %acc1 = flash.rescale %acc, %alpha : tensor<64x64xf32>, tensor<64xf32>
      %pt = arith.truncf %p : tensor<64x64xf32> to tensor<64x64xf16>
      %acc2 = flash.dot %pt, %vt, %acc1 : tensor<64x64xf16>, tensor<64x64xf16> -> tensor<64x64xf32>
      scf.yield %acc2, %mn, %ln : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>
    }
    %out, %lse = flash.finalize %r#0, %r#1, %r#2 : tensor<64x64xf32>, tensor<64xf32>
    %ot = arith.truncf %out : tensor<64x64xf32> to tensor<64x64xf16>
    flash.store_tile %ot, %o[%bi, %hi, %row] : tensor<64x64xf16> -> memref<?x?x?x64xf16>
  }
  return
}

// -----

func.func @extra_op(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>, %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) attributes {flash.config = #flash.config<block_m = 64, block_n = 64, stages = 2, warpgroups = 1>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %zero_row = arith.constant dense<0.000000e+00> : tensor<64xf32>
  %ninf_row = arith.constant dense<0xFF800000> : tensor<64xf32>
  %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
  %b = memref.dim %q, %c0 : memref<?x?x?x64xf16>
  %h = memref.dim %q, %c1 : memref<?x?x?x64xf16>
  %nq = memref.dim %q, %c2 : memref<?x?x?x64xf16>
  %nk = memref.dim %k, %c2 : memref<?x?x?x64xf16>
  %tiles = arith.ceildivui %nq, %c64 : index
  %bh = arith.muli %b, %h : index
  flash.grid %tiles, %bh {
    %pid = flash.program_id 0
    %pbh = flash.program_id 1
    %bi = arith.divui %pbh, %h : index
    %hi = arith.remui %pbh, %h : index
    %row = arith.muli %pid, %c64 : index
    %qt = flash.load_tile %q[%bi, %hi, %row] : memref<?x?x?x64xf16> -> tensor<64x64xf16>
    %r:3 = scf.for %j = %c0 to %nk step %c64 iter_args(%acc = %zero, %m = %ninf_row, %l = %zero_row) -> (tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>) {
      %kt = flash.load_tile %k[%bi, %hi, %j] : memref<?x?x?x64xf16> -> tensor<64x64xf16>
      %vt = flash.load_tile %v[%bi, %hi, %j] : memref<?x?x?x64xf16> -> tensor<64x64xf16>
      %s = flash.dot %qt, %kt, %zero transpose_b : tensor<64x64xf16>, tensor<64x64xf16> -> tensor<64x64xf32>
      %sm = flash.mask %s, %row, %j, %nq, %nk : tensor<64x64xf32>
      // expected-error @+1 {{flash-to-gpu: unsupported op in a key loop of the tile program: math.exp}}
      %unused = math.exp %sm : tensor<64x64xf32>
      %p, %mn, %ln, %alpha = flash.softmax_update %sm, %m, %l base2 {scale = 0.180336878 : f32} : tensor<64x64xf32>, tensor<64xf32>
      %acc1 = flash.rescale %acc, %alpha : tensor<64x64xf32>, tensor<64xf32>
      %pt = arith.truncf %p : tensor<64x64xf32> to tensor<64x64xf16>
      %acc2 = flash.dot %pt, %vt, %acc1 : tensor<64x64xf16>, tensor<64x64xf16> -> tensor<64x64xf32>
      scf.yield %acc2, %mn, %ln : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>
    }
    %out, %lse = flash.finalize %r#0, %r#1, %r#2 base2 : tensor<64x64xf32>, tensor<64xf32>
    %ot = arith.truncf %out : tensor<64x64xf32> to tensor<64x64xf16>
    flash.store_tile %ot, %o[%bi, %hi, %row] : tensor<64x64xf16> -> memref<?x?x?x64xf16>
  }
  return
}

// -----

// A key loop that hands the row sums on as the running max (and the other
// way round) is not the online softmax the kernel carries.
func.func @swapped_statistics(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>, %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) attributes {flash.config = #flash.config<block_m = 64, block_n = 64, stages = 2, warpgroups = 1>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %zero_row = arith.constant dense<0.000000e+00> : tensor<64xf32>
  %ninf_row = arith.constant dense<0xFF800000> : tensor<64xf32>
  %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
  %b = memref.dim %q, %c0 : memref<?x?x?x64xf16>
  %h = memref.dim %q, %c1 : memref<?x?x?x64xf16>
  %nq = memref.dim %q, %c2 : memref<?x?x?x64xf16>
  %nk = memref.dim %k, %c2 : memref<?x?x?x64xf16>
  %tiles = arith.ceildivui %nq, %c64 : index
  %bh = arith.muli %b, %h : index
  flash.grid %tiles, %bh {
    %pid = flash.program_id 0
    %pbh = flash.program_id 1
    %bi = arith.divui %pbh, %h : index
    %hi = arith.remui %pbh, %h : index
    %row = arith.muli %pid, %c64 : index
    %qt = flash.load_tile %q[%bi, %hi, %row] : memref<?x?x?x64xf16> -> tensor<64x64xf16>
    // expected-error @+1 {{flash-to-gpu: a key loop must carry O through flash.rescale and the running max and sums through one flash.softmax_update}}
    %r:3 = scf.for %j = %c0 to %nk step %c64 iter_args(%acc = %zero, %m = %ninf_row, %l = %zero_row) -> (tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>) {
      %kt = flash.load_tile %k[%bi, %hi, %j] : memref<?x?x?x64xf16> -> tensor<64x64xf16>
      %vt = flash.load_tile %v[%bi, %hi, %j] : memref<?x?x?x64xf16> -> tensor<64x64xf16>
      %s = flash.dot %qt, %kt, %zero transpose_b : tensor<64x64xf16>, tensor<64x64xf16> -> tensor<64x64xf32>
      %sm = flash.mask %s, %row, %j, %nq, %nk : tensor<64x64xf32>
      %p, %mn, %ln, %alpha = flash.softmax_update %sm, %m, %l base2 {scale = 0.180336878 : f32} : tensor<64x64xf32>, tensor<64xf32>
      %acc1 = flash.rescale %acc, %alpha : tensor<64x64xf32>, tensor<64xf32>
      %pt = arith.truncf %p : tensor<64x64xf32> to tensor<64x64xf16>
      %acc2 = flash.dot %pt, %vt, %acc1 : tensor<64x64xf16>, tensor<64x64xf16> -> tensor<64x64xf32>
      scf.yield %acc2, %ln, %mn : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>
    }
    %out, %lse = flash.finalize %r#0, %r#1, %r#2 base2 : tensor<64x64xf32>, tensor<64xf32>
    %ot = arith.truncf %out : tensor<64x64xf32> to tensor<64x64xf16>
    flash.store_tile %ot, %o[%bi, %hi, %row] : tensor<64x64xf16> -> memref<?x?x?x64xf16>
  }
  return
}

// -----

// Without flash.mask in its key loop the kernel would take the zeros TMA
// reads past seq_k for keys.
func.func @no_mask(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>, %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) attributes {flash.config = #flash.config<block_m = 64, block_n = 64, stages = 2, warpgroups = 1>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %zero_row = arith.constant dense<0.000000e+00> : tensor<64xf32>
  %ninf_row = arith.constant dense<0xFF800000> : tensor<64xf32>
  %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
  %b = memref.dim %q, %c0 : memref<?x?x?x64xf16>
  %h = memref.dim %q, %c1 : memref<?x?x?x64xf16>
  %nq = memref.dim %q, %c2 : memref<?x?x?x64xf16>
  %nk = memref.dim %k, %c2 : memref<?x?x?x64xf16>
  %tiles = arith.ceildivui %nq, %c64 : index
  %bh = arith.muli %b, %h : index
  flash.grid %tiles, %bh {
    %pid = flash.program_id 0
    %pbh = flash.program_id 1
    %bi = arith.divui %pbh, %h : index
    %hi = arith.remui %pbh, %h : index
    %row = arith.muli %pid, %c64 : index
    %qt = flash.load_tile %q[%bi, %hi, %row] : memref<?x?x?x64xf16> -> tensor<64x64xf16>
    // expected-error @+1 {{flash-to-gpu: expected a key loop with flash.mask last, after at most one without (the split of -flash-fuse)}}
    %r:3 = scf.for %j = %c0 to %nk step %c64 iter_args(%acc = %zero, %m = %ninf_row, %l = %zero_row) -> (tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>) {
      %kt = flash.load_tile %k[%bi, %hi, %j] : memref<?x?x?x64xf16> -> tensor<64x64xf16>
      %vt = flash.load_tile %v[%bi, %hi, %j] : memref<?x?x?x64xf16> -> tensor<64x64xf16>
      %s = flash.dot %qt, %kt, %zero transpose_b : tensor<64x64xf16>, tensor<64x64xf16> -> tensor<64x64xf32>
      %p, %mn, %ln, %alpha = flash.softmax_update %s, %m, %l base2 {scale = 0.180336878 : f32} : tensor<64x64xf32>, tensor<64xf32>
      %acc1 = flash.rescale %acc, %alpha : tensor<64x64xf32>, tensor<64xf32>
      %pt = arith.truncf %p : tensor<64x64xf32> to tensor<64x64xf16>
      %acc2 = flash.dot %pt, %vt, %acc1 : tensor<64x64xf16>, tensor<64x64xf16> -> tensor<64x64xf32>
      scf.yield %acc2, %mn, %ln : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>
    }
    %out, %lse = flash.finalize %r#0, %r#1, %r#2 base2 : tensor<64x64xf32>, tensor<64xf32>
    %ot = arith.truncf %out : tensor<64x64xf32> to tensor<64x64xf16>
    flash.store_tile %ot, %o[%bi, %hi, %row] : tensor<64x64xf16> -> memref<?x?x?x64xf16>
  }
  return
}
