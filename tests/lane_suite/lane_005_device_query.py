"""A module that asks the CUDA device for its capability while it is imported, as Torch-TensorRT's suites do.

On a CPU runner the ``skipIf`` below raises at import: a collection error, which interrupts the session. Under
``--trtcap-needs-gpu skip`` the module is reported as skipped, naming the decorator's line.
"""

import unittest

import torch
import torch_tensorrt as torchtrt  # noqa: F401  (module level, as Torch-TensorRT's test modules do)


class TestAmpereOnly(unittest.TestCase):
    @unittest.skipIf(
        torch.cuda.get_device_properties(torch.cuda.current_device()).major < 8, "needs Ampere or newer"
    )
    def test_bf16_on_ampere(self):
        self.assertTrue(torch.cuda.is_bf16_supported())


if __name__ == "__main__":
    unittest.main()
