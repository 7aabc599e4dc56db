/* A header named like tinyacc's with other content: the collision test. */
#pragma once
int tinyclash_begin(void);
