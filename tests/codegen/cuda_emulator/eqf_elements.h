#pragma once
// Element access for the emulator's libraries (cublas_v2.h, cudnn.h): f32, f16 or bf16 at index
// i, read as float and stored rounded to nearest even. Included after the generated prelude,
// whose 16-bit conversions it uses.
#include <cstdint>

namespace eqf_emu {

enum class Element { f32, f16, bf16 };

inline float load(const void* p, Element t, long long i) {
  if (t == Element::f32) return static_cast<const float*>(p)[i];
  const uint16_t bits = static_cast<const uint16_t*>(p)[i];
  return t == Element::bf16 ? eqf_bits_float(uint32_t(bits) << 16) : eqf_f16_to_float(bits);
}

inline void store(void* p, Element t, long long i, float v) {
  if (t == Element::f32)
    static_cast<float*>(p)[i] = v;
  else
    static_cast<uint16_t*>(p)[i] = t == Element::bf16 ? eqf_float_to_bf16(v) : eqf_float_to_f16(v);
}

}  // namespace eqf_emu
