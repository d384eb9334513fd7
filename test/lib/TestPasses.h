//===- TestPasses.h - tg-opt's test passes -------------------------*- C++
//-*-===//

#ifndef TGC_TEST_LIB_TESTPASSES_H
#define TGC_TEST_LIB_TESTPASSES_H

namespace mlir::tg {

/// tg-test-cost-model.
void registerTestCostModelPass();

} // namespace mlir::tg

#endif // TGC_TEST_LIB_TESTPASSES_H
