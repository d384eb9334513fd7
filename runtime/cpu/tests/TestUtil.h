//===- TestUtil.h - Shared helpers of the CPU kernel tests ---------*- C++ -*-===//
//
// Seeded random tensors, elementwise comparison against double references,
// and the central finite-difference check every gradient kernel is held to.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CPU_TESTS_TESTUTIL_H
#define TGC_RUNTIME_CPU_TESTS_TESTUTIL_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tgc::cpu::test {

/// Uniform floats in [lo, hi) from a fixed seed.
std::vector<float> randomVector(int64_t n, uint32_t seed, float lo = -1.0f,
                                float hi = 1.0f);

/// Distinct values (a shuffled ramp with spacing `gap`), so that maxima are
/// unique and survive small perturbations.
std::vector<float> distinctVector(int64_t n, uint32_t seed, float gap = 0.05f);

int64_t product(const std::vector<int64_t> &shape);

/// Expects |got - want| <= atol + rtol * |want| elementwise.
void expectClose(const std::vector<float> &got, const std::vector<double> &want,
                 double rtol, double atol, const std::string &what);
void expectClose(const std::vector<float> &got, const std::vector<float> &want,
                 double rtol, double atol, const std::string &what);

/// Checks `analytic`, the gradient of loss() with respect to `x`, against
/// central differences with step h (taken on the float grid) at every
/// element; loss() reads x.
void expectGradientMatches(std::vector<float> &x,
                           const std::vector<float> &analytic,
                           const std::function<double()> &loss, double h,
                           double rtol, double atol, const std::string &what);

/// sum_i weights[i] * y[i] in double: the scalar the finite differences
/// differentiate.
double weightedSum(const std::vector<float> &y,
                   const std::vector<float> &weights);

} // namespace tgc::cpu::test

#endif // TGC_RUNTIME_CPU_TESTS_TESTUTIL_H
