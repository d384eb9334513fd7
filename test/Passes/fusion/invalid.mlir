// tg-fuse's options are enums: a value that names no choice is refused when
// the option is parsed, naming the choices, which --help lists too.
// RUN: not tg-opt %s -tg-fuse=fusion=greedy 2>&1 | FileCheck %s --check-prefix=RULES
// RULES: for the --fusion option: 'greedy' is not one of none, elementwise, all
// RUN: not tg-opt %s -tg-fuse=target=tpu 2>&1 | FileCheck %s --check-prefix=TARGET
// TARGET: for the --target option: 'tpu' is not one of cpu, cuda
// RUN: tg-opt --help | FileCheck %s --check-prefix=HELP
// HELP: --tg-fuse
// HELP-NEXT: --fusion=<value>
// HELP-NEXT: =none
// HELP-NEXT: =elementwise
// HELP-NEXT: =all
// HELP-NEXT: --target=<value>
// HELP-NEXT: =cpu
// HELP-NEXT: =cuda

func.func @any(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
