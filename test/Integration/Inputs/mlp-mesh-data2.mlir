// A hand-partitioned MLP (examples/mlp.json after tg-partition) on mesh
// data=2: the batch split over "data", fc1.weight split by columns and
// fc2.weight by rows (ZeRO-3, with their optimizer state), the others
// replicated. Types are local (per process). Used by collectives-mesh.test.
module attributes {tg.model = "mlp", tg.phase = #tg<phase partition>, tg.training = {batch_size = 32 : i64, optimizer = {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64, kind = "adamw", lr = 1.000000e-03 : f64, no_decay = ["*.bias"], weight_decay = 1.000000e-02 : f64}, precision = "fp32", schedule = {kind = "cosine", min_lr = 1.000000e-04 : f64, total_steps = 300 : i64, warmup_steps = 20 : i64}, seed = 0 : i64, steps = 300 : i64}} {
  tg.mesh @mesh ["data" = 2]
  func.func @forward(%w1: tensor<64x64xf32> {tg.init = #tg.init<kaiming_normal, gain = 1.4142135623730951>, tg.param = "fc1.weight", tg.sharding = #tg.sharding<@mesh, [{}, {"data"}]>}, %b1: tensor<128xf32> {tg.init = #tg.init<zeros>, tg.param = "fc1.bias", tg.sharding = #tg.sharding<@mesh, [{}]>}, %w2: tensor<64x10xf32> {tg.init = #tg.init<xavier_uniform>, tg.param = "fc2.weight", tg.sharding = #tg.sharding<@mesh, [{"data"}, {}]>}, %b2: tensor<10xf32> {tg.init = #tg.init<zeros>, tg.param = "fc2.bias", tg.sharding = #tg.sharding<@mesh, [{}]>}, %x: tensor<16x64xf32> {tg.dim_names = ["batch", ""], tg.input = "x", tg.sharding = #tg.sharding<@mesh, [{"data"}, {}]>}, %y: tensor<16xi64> {tg.dim_names = ["batch"], tg.input = "y", tg.sharding = #tg.sharding<@mesh, [{"data"}]>}) -> (tensor<f32> {tg.output = "loss"}, tensor<16x10xf32> {tg.output = "logits"}) {
    %wf1 = tg.all_gather %w1 {dim = 1 : i64, mesh_axis = "data"} : tensor<64x64xf32> -> tensor<64x128xf32>
    %wf2 = tg.all_gather %w2 {dim = 0 : i64, mesh_axis = "data"} : tensor<64x10xf32> -> tensor<128x10xf32>
    %0 = tg.matmul %x, %wf1 : tensor<16x64xf32>, tensor<64x128xf32> -> tensor<16x128xf32>
    %1 = tg.add %0, %b1 : tensor<16x128xf32>, tensor<128xf32> -> tensor<16x128xf32>
    %2 = tg.relu %1 : tensor<16x128xf32>
    %3 = tg.matmul %2, %wf2 : tensor<16x128xf32>, tensor<128x10xf32> -> tensor<16x10xf32>
    %4 = tg.add %3, %b2 : tensor<16x10xf32>, tensor<10xf32> -> tensor<16x10xf32>
    %5 = tg.cross_entropy %4, %y : tensor<16x10xf32>, tensor<16xi64> -> tensor<f32>
    %loss = tg.all_reduce %5 {mesh_axis = "data", reduction = #tg<reduction mean>} : tensor<f32>
    return %loss, %4 : tensor<f32>, tensor<16x10xf32>
  }
  func.func @forward_backward(%w1: tensor<64x64xf32> {tg.init = #tg.init<kaiming_normal, gain = 1.4142135623730951>, tg.param = "fc1.weight", tg.sharding = #tg.sharding<@mesh, [{}, {"data"}]>}, %b1: tensor<128xf32> {tg.init = #tg.init<zeros>, tg.param = "fc1.bias", tg.sharding = #tg.sharding<@mesh, [{}]>}, %w2: tensor<64x10xf32> {tg.init = #tg.init<xavier_uniform>, tg.param = "fc2.weight", tg.sharding = #tg.sharding<@mesh, [{"data"}, {}]>}, %b2: tensor<10xf32> {tg.init = #tg.init<zeros>, tg.param = "fc2.bias", tg.sharding = #tg.sharding<@mesh, [{}]>}, %x: tensor<16x64xf32> {tg.dim_names = ["batch", ""], tg.input = "x", tg.sharding = #tg.sharding<@mesh, [{"data"}, {}]>}, %y: tensor<16xi64> {tg.dim_names = ["batch"], tg.input = "y", tg.sharding = #tg.sharding<@mesh, [{"data"}]>}) -> (tensor<f32> {tg.output = "loss"}, tensor<16x10xf32> {tg.output = "logits"}, tensor<64x64xf32> {tg.grad = "fc1.weight"}, tensor<128xf32> {tg.grad = "fc1.bias"}, tensor<64x10xf32> {tg.grad = "fc2.weight"}, tensor<10xf32> {tg.grad = "fc2.bias"}) {
    %wf1 = tg.all_gather %w1 {dim = 1 : i64, mesh_axis = "data"} : tensor<64x64xf32> -> tensor<64x128xf32>
    %wf2 = tg.all_gather %w2 {dim = 0 : i64, mesh_axis = "data"} : tensor<64x10xf32> -> tensor<128x10xf32>
    %0 = tg.matmul %x, %wf1 : tensor<16x64xf32>, tensor<64x128xf32> -> tensor<16x128xf32>
    %1 = tg.add %0, %b1 : tensor<16x128xf32>, tensor<128xf32> -> tensor<16x128xf32>
    %2 = tg.relu %1 : tensor<16x128xf32>
    %3 = tg.matmul %2, %wf2 : tensor<16x128xf32>, tensor<128x10xf32> -> tensor<16x10xf32>
    %4 = tg.add %3, %b2 : tensor<16x10xf32>, tensor<10xf32> -> tensor<16x10xf32>
    %5 = tg.cross_entropy %4, %y : tensor<16x10xf32>, tensor<16xi64> -> tensor<f32>
    %loss = tg.all_reduce %5 {mesh_axis = "data", reduction = #tg<reduction mean>} : tensor<f32>
    %c0 = tg.constant dense<0.000000e+00> : tensor<f32>
    %c1 = tg.constant dense<1.000000e+00> : tensor<f32>
    %8 = tg.cross_entropy_grad %c1, %4, %y : tensor<f32>, tensor<16x10xf32>, tensor<16xi64> -> tensor<16x10xf32>
    %9 = tg.reduce_sum %8 {dims = array<i64: 0>} : tensor<16x10xf32> -> tensor<10xf32>
    %10 = tg.matmul %8, %wf2 {transpose_rhs = true} : tensor<16x10xf32>, tensor<128x10xf32> -> tensor<16x128xf32>
    %11 = tg.matmul %2, %8 {transpose_lhs = true} : tensor<16x128xf32>, tensor<16x10xf32> -> tensor<128x10xf32>
    %12 = tg.compare  gt, %1, %c0 : tensor<16x128xf32>, tensor<f32> -> tensor<16x128xi1>
    %13 = tg.select %12, %10, %c0 : tensor<16x128xi1>, tensor<16x128xf32>, tensor<f32> -> tensor<16x128xf32>
    %14 = tg.reduce_sum %13 {dims = array<i64: 0>} : tensor<16x128xf32> -> tensor<128xf32>
    %15 = tg.matmul %x, %13 {transpose_lhs = true} : tensor<16x64xf32>, tensor<16x128xf32> -> tensor<64x128xf32>
    %g1 = tg.all_slice %15 {dim = 1 : i64, mesh_axis = "data"} : tensor<64x128xf32> -> tensor<64x64xf32>
    %g2 = tg.all_slice %11 {dim = 0 : i64, mesh_axis = "data"} : tensor<128x10xf32> -> tensor<64x10xf32>
    return %loss, %4, %g1, %14, %g2, %9 : tensor<f32>, tensor<16x10xf32>, tensor<64x64xf32>, tensor<128xf32>, tensor<64x10xf32>, tensor<10xf32>
  }
  func.func @train_step(%w1: tensor<64x64xf32> {tg.init = #tg.init<kaiming_normal, gain = 1.4142135623730951>, tg.param = "fc1.weight", tg.sharding = #tg.sharding<@mesh, [{}, {"data"}]>}, %b1: tensor<128xf32> {tg.init = #tg.init<zeros>, tg.param = "fc1.bias", tg.sharding = #tg.sharding<@mesh, [{}]>}, %w2: tensor<64x10xf32> {tg.init = #tg.init<xavier_uniform>, tg.param = "fc2.weight", tg.sharding = #tg.sharding<@mesh, [{"data"}, {}]>}, %b2: tensor<10xf32> {tg.init = #tg.init<zeros>, tg.param = "fc2.bias", tg.sharding = #tg.sharding<@mesh, [{}]>}, %s0: tensor<64x64xf32> {tg.state = "fc1.weight.exp_avg", tg.sharding = #tg.sharding<@mesh, [{}, {"data"}]>}, %s1: tensor<64x64xf32> {tg.state = "fc1.weight.exp_avg_sq", tg.sharding = #tg.sharding<@mesh, [{}, {"data"}]>}, %s2: tensor<128xf32> {tg.state = "fc1.bias.exp_avg", tg.sharding = #tg.sharding<@mesh, [{}]>}, %s3: tensor<128xf32> {tg.state = "fc1.bias.exp_avg_sq", tg.sharding = #tg.sharding<@mesh, [{}]>}, %s4: tensor<64x10xf32> {tg.state = "fc2.weight.exp_avg", tg.sharding = #tg.sharding<@mesh, [{"data"}, {}]>}, %s5: tensor<64x10xf32> {tg.state = "fc2.weight.exp_avg_sq", tg.sharding = #tg.sharding<@mesh, [{"data"}, {}]>}, %s6: tensor<10xf32> {tg.state = "fc2.bias.exp_avg", tg.sharding = #tg.sharding<@mesh, [{}]>}, %s7: tensor<10xf32> {tg.state = "fc2.bias.exp_avg_sq", tg.sharding = #tg.sharding<@mesh, [{}]>}, %x: tensor<16x64xf32> {tg.dim_names = ["batch", ""], tg.input = "x", tg.sharding = #tg.sharding<@mesh, [{"data"}, {}]>}, %y: tensor<16xi64> {tg.dim_names = ["batch"], tg.input = "y", tg.sharding = #tg.sharding<@mesh, [{"data"}]>}, %step: tensor<i64> {tg.scalar = "step"}, %base_lr: tensor<f32> {tg.scalar = "base_lr"}) -> (tensor<64x64xf32> {tg.update = "fc1.weight"}, tensor<128xf32> {tg.update = "fc1.bias"}, tensor<64x10xf32> {tg.update = "fc2.weight"}, tensor<10xf32> {tg.update = "fc2.bias"}, tensor<64x64xf32> {tg.update = "fc1.weight.exp_avg"}, tensor<64x64xf32> {tg.update = "fc1.weight.exp_avg_sq"}, tensor<128xf32> {tg.update = "fc1.bias.exp_avg"}, tensor<128xf32> {tg.update = "fc1.bias.exp_avg_sq"}, tensor<64x10xf32> {tg.update = "fc2.weight.exp_avg"}, tensor<64x10xf32> {tg.update = "fc2.weight.exp_avg_sq"}, tensor<10xf32> {tg.update = "fc2.bias.exp_avg"}, tensor<10xf32> {tg.update = "fc2.bias.exp_avg_sq"}, tensor<f32> {tg.metric = "loss"}, tensor<f32> {tg.metric = "grad_norm"}, tensor<f32> {tg.metric = "lr"}) {
    %wf1 = tg.all_gather %w1 {dim = 1 : i64, mesh_axis = "data"} : tensor<64x64xf32> -> tensor<64x128xf32>
    %wf2 = tg.all_gather %w2 {dim = 0 : i64, mesh_axis = "data"} : tensor<64x10xf32> -> tensor<128x10xf32>
    %0 = tg.matmul %x, %wf1 : tensor<16x64xf32>, tensor<64x128xf32> -> tensor<16x128xf32>
    %1 = tg.add %0, %b1 : tensor<16x128xf32>, tensor<128xf32> -> tensor<16x128xf32>
    %2 = tg.relu %1 : tensor<16x128xf32>
    %3 = tg.matmul %2, %wf2 : tensor<16x128xf32>, tensor<128x10xf32> -> tensor<16x10xf32>
    %4 = tg.add %3, %b2 : tensor<16x10xf32>, tensor<10xf32> -> tensor<16x10xf32>
    %5 = tg.cross_entropy %4, %y : tensor<16x10xf32>, tensor<16xi64> -> tensor<f32>
    %loss = tg.all_reduce %5 {mesh_axis = "data", reduction = #tg<reduction mean>} : tensor<f32>
    %c0 = tg.constant dense<0.000000e+00> : tensor<f32>
    %c1 = tg.constant dense<1.000000e+00> : tensor<f32>
    %8 = tg.cross_entropy_grad %c1, %4, %y : tensor<f32>, tensor<16x10xf32>, tensor<16xi64> -> tensor<16x10xf32>
    %9 = tg.reduce_sum %8 {dims = array<i64: 0>} : tensor<16x10xf32> -> tensor<10xf32>
    %10 = tg.matmul %8, %wf2 {transpose_rhs = true} : tensor<16x10xf32>, tensor<128x10xf32> -> tensor<16x128xf32>
    %11 = tg.matmul %2, %8 {transpose_lhs = true} : tensor<16x128xf32>, tensor<16x10xf32> -> tensor<128x10xf32>
    %12 = tg.compare  gt, %1, %c0 : tensor<16x128xf32>, tensor<f32> -> tensor<16x128xi1>
    %13 = tg.select %12, %10, %c0 : tensor<16x128xi1>, tensor<16x128xf32>, tensor<f32> -> tensor<16x128xf32>
    %14 = tg.reduce_sum %13 {dims = array<i64: 0>} : tensor<16x128xf32> -> tensor<128xf32>
    %15 = tg.matmul %x, %13 {transpose_lhs = true} : tensor<16x64xf32>, tensor<16x128xf32> -> tensor<64x128xf32>
    // fc1.weight: the whole gradient everywhere, then this process's columns.
    %r:3 = tg.all_reduce %15, %14, %9 {mesh_axis = "data", reduction = #tg<reduction mean>} : tensor<64x128xf32>, tensor<128xf32>, tensor<10xf32>
    %g1 = tg.all_slice %r#0 {dim = 1 : i64, mesh_axis = "data"} : tensor<64x128xf32> -> tensor<64x64xf32>
    // fc2.weight: each process only gets its rows (ZeRO), gathered again for the norm.
    %g2 = tg.reduce_scatter %11 {dim = 0 : i64, mesh_axis = "data", reduction = #tg<reduction mean>} : tensor<128x10xf32> -> tensor<64x10xf32>
    %g2full = tg.all_gather %g2 {dim = 0 : i64, mesh_axis = "data"} : tensor<64x10xf32> -> tensor<128x10xf32>
    %17 = tg.global_norm %r#0, %r#1, %g2full, %r#2 : tensor<64x128xf32>, tensor<128xf32>, tensor<128x10xf32>, tensor<10xf32> -> tensor<f32>
    %18 = tg.lr_schedule %step, %base_lr {kind = #tg<schedule cosine>, min_lr = 1.000000e-04 : f64, total_steps = 300 : i64, warmup_steps = 20 : i64} : tensor<i64>, tensor<f32> -> tensor<f32>
    %p0, %n0:2 = tg.optimizer_update  adamw %w1, %g1, %18, %step, %s0, %s1 {weight_decay = 1.000000e-02 : f64} : tensor<64x64xf32>, tensor<64x64xf32>, tensor<f32>, tensor<i64>, tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
    %p1, %n1:2 = tg.optimizer_update  adamw %b1, %r#1, %18, %step, %s2, %s3 : tensor<128xf32>, tensor<128xf32>, tensor<f32>, tensor<i64>, tensor<128xf32>, tensor<128xf32> -> tensor<128xf32>, tensor<128xf32>, tensor<128xf32>
    %p2, %n2:2 = tg.optimizer_update  adamw %w2, %g2, %18, %step, %s4, %s5 {weight_decay = 1.000000e-02 : f64} : tensor<64x10xf32>, tensor<64x10xf32>, tensor<f32>, tensor<i64>, tensor<64x10xf32>, tensor<64x10xf32> -> tensor<64x10xf32>, tensor<64x10xf32>, tensor<64x10xf32>
    %p3, %n3:2 = tg.optimizer_update  adamw %b2, %r#2, %18, %step, %s6, %s7 : tensor<10xf32>, tensor<10xf32>, tensor<f32>, tensor<i64>, tensor<10xf32>, tensor<10xf32> -> tensor<10xf32>, tensor<10xf32>, tensor<10xf32>
    return %p0, %p1, %p2, %p3, %n0#0, %n0#1, %n1#0, %n1#1, %n2#0, %n2#1, %n3#0, %n3#1, %loss, %17, %18 : tensor<64x64xf32>, tensor<128xf32>, tensor<64x10xf32>, tensor<10xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<128xf32>, tensor<128xf32>, tensor<64x10xf32>, tensor<64x10xf32>, tensor<10xf32>, tensor<10xf32>, tensor<f32>, tensor<f32>, tensor<f32>
  }
}
