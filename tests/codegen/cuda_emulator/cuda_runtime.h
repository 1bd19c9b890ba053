#pragma once
// The emulator's stand-in for the CUDA runtime header (eqf_cuda_emulator.h).
#include "eqf_cuda_emulator.h"
