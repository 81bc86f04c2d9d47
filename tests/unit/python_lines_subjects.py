# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The functions whose CPython 3.11 location tables tests/unit/test_python_lines.c holds.
def simple(a):
    b = a + 1
    return b


def multiline(x):
    y = (x +
         2 *
         x)
    if y > 3:
        z = [i for i in range(y)]
    else:
        z = None
    return z


def with_except(n):
    try:
        return 1 / n
    except ZeroDivisionError:
        return None
    finally:
        n = 0



def far_apart():
    a = 1
    # a long comment block to make a large line delta
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    b = 2
    return a + b


def generator(n):
    for i in range(n):
        yield i * 2
