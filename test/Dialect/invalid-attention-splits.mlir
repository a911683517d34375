// RUN: flash-opt %s -split-input-file -verify-diagnostics

// Split-KV's scratch: a rank-5 f32 partial output.
!t = memref<?x8x?x64xbf16>
func.func @partial_out_rank(%q: !t, %k: !t, %v: !t, %o: !t,
                            %po: memref<?x?x8x?xf32>, %pl: memref<?x?x8x?xf32>) {
  // expected-error @+1 {{'partial_out' must be a rank-5 memref of f32 (splits x batch x heads x seq x head dim), got 'memref<?x?x8x?xf32>'}}
  flash.attention %q, %k, %v -> %o
      splits(%po : memref<?x?x8x?xf32>, %pl : memref<?x?x8x?xf32>)
      : !t, !t, !t -> !t
  return
}

// -----

!t = memref<?x8x?x64xbf16>
func.func @partial_out_type(%q: !t, %k: !t, %v: !t, %o: !t,
                            %po: memref<?x?x8x?x64xbf16>,
                            %pl: memref<?x?x8x?xf32>) {
  // expected-error @+1 {{'partial_out' must be a rank-5 memref of f32}}
  flash.attention %q, %k, %v -> %o
      splits(%po : memref<?x?x8x?x64xbf16>, %pl : memref<?x?x8x?xf32>)
      : !t, !t, !t -> !t
  return
}

// -----

!t = memref<?x8x?x64xbf16>
func.func @partial_lse_rank(%q: !t, %k: !t, %v: !t, %o: !t,
                            %po: memref<?x?x8x?x64xf32>,
                            %pl: memref<?x8x?xf32>) {
  // expected-error @+1 {{'partial_lse' must be a rank-4 memref of f32 (splits x batch x heads x seq), got 'memref<?x8x?xf32>'}}
  flash.attention %q, %k, %v -> %o
      splits(%po : memref<?x?x8x?x64xf32>, %pl : memref<?x8x?xf32>)
      : !t, !t, !t -> !t
  return
}

// -----

!t = memref<?x8x?x64xbf16>
func.func @splits_mismatch(%q: !t, %k: !t, %v: !t, %o: !t,
                           %po: memref<4x?x8x?x64xf32>,
                           %pl: memref<2x?x8x?xf32>) {
  // expected-error @+1 {{splits mismatch: 'partial_out' has 4 but 'partial_lse' has 2}}
  flash.attention %q, %k, %v -> %o
      splits(%po : memref<4x?x8x?x64xf32>, %pl : memref<2x?x8x?xf32>)
      : !t, !t, !t -> !t
  return
}

// -----

!t = memref<?x8x?x64xbf16>
func.func @heads_mismatch(%q: !t, %k: !t, %v: !t, %o: !t,
                          %po: memref<?x?x4x?x64xf32>,
                          %pl: memref<?x?x8x?xf32>) {
  // expected-error @+1 {{heads mismatch: 'partial_out' has 4 but 'q' has 8}}
  flash.attention %q, %k, %v -> %o
      splits(%po : memref<?x?x4x?x64xf32>, %pl : memref<?x?x8x?xf32>)
      : !t, !t, !t -> !t
  return
}

// -----

!t = memref<?x8x?x64xbf16>
func.func @head_dim_mismatch(%q: !t, %k: !t, %v: !t, %o: !t,
                             %po: memref<?x?x8x?x128xf32>,
                             %pl: memref<?x?x8x?xf32>) {
  // expected-error @+1 {{head dim mismatch: 'partial_out' has 128 but 'q' has 64}}
  flash.attention %q, %k, %v -> %o
      splits(%po : memref<?x?x8x?x128xf32>, %pl : memref<?x?x8x?xf32>)
      : !t, !t, !t -> !t
  return
}

// -----

!t = memref<2x8x?x64xbf16>
func.func @batch_mismatch(%q: !t, %k: !t, %v: !t, %o: !t,
                          %po: memref<?x2x8x?x64xf32>,
                          %pl: memref<?x3x8x?xf32>) {
  // expected-error @+1 {{batch mismatch: 'partial_lse' has 3 but 'q' has 2}}
  flash.attention %q, %k, %v -> %o
      splits(%po : memref<?x2x8x?x64xf32>, %pl : memref<?x3x8x?xf32>)
      : !t, !t, !t -> !t
  return
}

// -----

!t = memref<1x8x?x64xbf16>
func.func @with_packed(%q: !t, %k: !t, %v: !t, %o: !t, %cq: memref<?xi32>,
                       %ck: memref<?xi32>, %max: index,
                       %po: memref<?x1x8x?x64xf32>, %pl: memref<?x1x8x?xf32>) {
  // expected-error @+1 {{split-KV and packed sequences do not go together yet}}
  flash.attention %q, %k, %v -> %o
      packed(%cq : memref<?xi32>, %ck : memref<?xi32>, max_q %max)
      splits(%po : memref<?x1x8x?x64xf32>, %pl : memref<?x1x8x?xf32>)
      : !t, !t, !t -> !t
  return
}

// -----

// The combine's tile op: an f32 accumulator and row vectors of its rows.
func.func @merge_rows(%part: tensor<64x128xf32>, %lse: tensor<32xf32>,
                      %acc: tensor<64x128xf32>, %m: tensor<32xf32>,
                      %l: tensor<32xf32>) {
  // expected-error @+1 {{'row_max' has 32 rows but 'acc' has 64}}
  %a, %mm, %ll = flash.merge_split %part, %lse into %acc, %m, %l
      : tensor<64x128xf32>, tensor<32xf32>
  return
}
