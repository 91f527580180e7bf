// Declarations-only stand-in for Gloo's gloo/algorithm.h (see context.h):
// ProcessGroupGloo.hpp includes it but uses none of it.
#pragma once

#include "gloo/context.h"
