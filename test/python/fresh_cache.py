"""The base class of the Python tests whose calls compile: each test class
gets a cache of its own (cls.cache, under cls.tmp) and the compiler its
`compiler` attribute names, FLASHC_DUMP unset; the environment is restored
after."""
import os
import shutil
import tempfile
import unittest


class FreshCacheTest(unittest.TestCase):
    compiler = None  # the flashc binary; the test module sets it

    @classmethod
    def setUpClass(cls):
        cls.saved = {k: os.environ.get(k) for k in
                     ("FLASHC_CACHE_DIR", "FLASHC_COMPILER", "FLASHC_DUMP")}
        cls.tmp = tempfile.mkdtemp(prefix="flashc-test-")
        cls.cache = os.path.join(cls.tmp, "cache")
        os.environ.update(FLASHC_CACHE_DIR=cls.cache,
                          FLASHC_COMPILER=cls.compiler)
        os.environ.pop("FLASHC_DUMP", None)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)
        for k, v in cls.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
