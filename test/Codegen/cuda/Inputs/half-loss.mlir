// A loss scaled by a constant: the seed of its gradient is 0.5, not 1.
module attributes {tg.model = "halfloss", tg.training = {batch_size = 4 : i64, optimizer = {kind = "sgd", lr = 1.0e-01 : f64}, schedule = {kind = "constant"}}} {
  func.func @forward(%w: tensor<8x6xf32> {tg.param = "w", tg.init = #tg.init<normal, std = 2.0e-02>},
                     %x: tensor<4x8xf32> {tg.input = "x", tg.dim_names = ["batch", ""]},
                     %y: tensor<4xi64> {tg.input = "y", tg.dim_names = ["batch"]})
      -> (tensor<f32> {tg.output = "loss"}) {
    %h = tg.matmul %x, %w : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32> loc("logits")
    %l = tg.cross_entropy %h, %y {reduction = #tg<loss_reduction sum>} : tensor<4x6xf32>, tensor<4xi64> -> tensor<f32> loc("ce")
    %c = tg.constant dense<0.5> : tensor<f32> loc("half")
    %loss = tg.mul %l, %c : tensor<f32>, tensor<f32> -> tensor<f32> loc("loss")
    return %loss : tensor<f32>
  }
}
