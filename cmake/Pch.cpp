//===- Pch.cpp - The translation unit the precompiled headers come from ---===//
//
// Empty: CMake precompiles cmake/PrecompiledHeaders.cmake's headers for this
// target (TgPch), and the compiler's libraries reuse them.
//
//===----------------------------------------------------------------------===//
