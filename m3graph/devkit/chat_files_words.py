"""Word lists the chat-with-files development set draws its facts from (m3graph/devkit/chat_files.py)."""

from __future__ import annotations

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
USERS = ("Ann", "Ben", "Chloe", "Dev", "Emma", "Farid", "Greta", "Hugo")
FRIENDS = ("Sam", "Nora", "Leo", "Ivy", "Omar", "Tess", "Paul", "Rita")
# One name per person of the identity set, the same in every conversation (a face is one identity everywhere).
PERSON_NAMES = ("Lena", "Marco", "Priya", "Tomas", "Aiko", "Jonas", "Fatima", "Diego", "Helga", "Kofi", "Mei",
                "Rafael", "Sofia")
RELATIONS = ("sister", "cousin", "colleague", "neighbour", "old school friend", "climbing partner", "flatmate",
             "uncle's friend")
PLACES = ("the farmers' market", "the train station", "the bookshop", "the harbour", "the gym", "the museum",
          "the bakery", "the concert", "the airport", "the flea market")
STORES = ("Bistro Luna", "Green Grocer", "Hardware Hub", "Pharma Plus", "Cafe Aurora", "Bike Barn", "Book Nook",
          "Sushi Ten", "Pet Palace", "Home Style", "Tech Corner", "Garden Centre")
CITIES = ("Lisbon", "Krakow", "Dublin", "Seville", "Tallinn", "Bologna", "Porto", "Ghent")
SERIES = (("Running distance", "km"), ("Electricity use", "kWh"), ("Savings", "EUR"), ("Daily steps", "thousand"),
          ("Cafe sales", "EUR"), ("Rainfall", "mm"), ("Reading time", "hours"), ("Water use", "litres"))
PETS = ("Biscuit", "Pepper", "Mochi", "Rufus", "Juniper", "Olive", "Ziggy", "Nala")
HOBBIES = ("pottery", "salsa dancing", "bouldering", "birdwatching", "chess", "sourdough baking", "rowing",
           "watercolour painting")
DISHES = ("mushroom risotto", "lentil soup", "pad thai", "shakshuka", "paella", "ramen", "gnocchi", "falafel")
CAR_COLOURS = ("red", "silver", "dark green", "white", "navy blue", "yellow", "black", "orange")
# Voice notes (spoken by espeak-ng, transcribed by the product's ASR): plain words a small Whisper model hears.
MEETING_PLACES = ("the rose garden", "the old lighthouse", "the boathouse", "the town hall", "the city library",
                  "the fish market", "the football stadium", "the train museum")
PICNIC_ITEMS = ("lemonade", "a blanket", "the guitar", "strawberries", "sandwiches", "a frisbee", "ice cream",
                "the camera")
WEEKDAYS = ("Monday", "Wednesday", "Thursday", "Friday")  # not Tuesday: a hobby is on Tuesdays
PAINT_COLOURS = ("pink", "purple", "grey", "brown", "lilac", "gold")  # none a car colour
