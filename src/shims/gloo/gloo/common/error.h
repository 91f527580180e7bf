// Declarations-only stand-in for Gloo's gloo/common/error.h (see
// ../context.h): ProcessGroupGloo.hpp includes it but uses none of it.
#pragma once
