"""One thread at a time imports torch's and transformers' model code.

Two threads importing torch and transformers at once can each wait on a module the other is
importing; Python then hands one of them a module half-imported ("cannot import name
'AlbertConfig' from 'transformers'"). The app imports that code in a thread of its own after
its first page (app/shell/serve.py) while the pages that need none of it go on drawing;
whatever else imports it in a thread beside that import, such as a foreign config.json read
through transformers' AutoConfig on the model card, holds MODEL_CODE while it does.
"""

import threading

MODEL_CODE = threading.RLock()  # re-entrant: the importing thread may read a config on its way
