#include "store/store_state.hpp"
