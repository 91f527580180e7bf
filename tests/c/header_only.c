/* Compiled alone as C99 -pedantic -Werror and as C++ by CTest. */
#include "ctorch.h"

int main(void) { return ct_abi_version() == CTORCH_ABI_VERSION ? 0 : 1; }
